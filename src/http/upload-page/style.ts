/** What the upload page adds to the shared stylesheet: the drop zone and the progress bar. */
export const UPLOAD_CSS = `
.drop{display:flex;flex-wrap:wrap;align-items:center;gap:.75rem 1rem;padding:1.5rem;border:2px dashed var(--line);border-radius:.75rem;background:var(--panel);margin:0 0 1rem}
.drop.over{border-color:var(--accent)}
.drop input{font:inherit;max-width:100%}
progress{width:100%;height:1rem;accent-color:var(--accent)}
#status{min-height:1.5em;overflow-wrap:anywhere}
`;
