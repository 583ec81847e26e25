/** The one stylesheet of the relay's pages (share page, upload page, home): light and dark. */
export const PAGE_CSS = `
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--bg:#fff;--panel:#f6f8fa;--line:#d0d7de;--accent:#0a5cc2;--on-accent:#fff}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9da7b3;--bg:#0d1117;--panel:#161b22;--line:#30363d;--accent:#4493f8;--on-accent:#0d1117}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:60rem;margin:0 auto;padding:1.5rem 1rem 3rem}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 1rem;overflow-wrap:anywhere}
h2{font-size:1.1rem;margin:2rem 0 .75rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0 0 1.5rem}
dt{color:var(--muted)}
dd{margin:0;overflow-wrap:anywhere}
a{color:var(--accent)}
.button{display:inline-block;padding:.7rem 1.4rem;border-radius:.5rem;background:var(--accent);color:var(--on-accent);font-weight:600;text-decoration:none}
.button:hover{filter:brightness(1.1)}
a:focus-visible{outline:3px solid var(--accent);outline-offset:3px}
pre{margin:0;padding:1rem;background:var(--panel);border:1px solid var(--line);border-radius:.5rem;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;overflow-wrap:anywhere;max-height:75vh;overflow:auto}
img,video{display:block;max-width:100%;height:auto;border:1px solid var(--line);border-radius:.5rem;background:var(--panel)}
audio{width:100%}
iframe{width:100%;height:80vh;border:1px solid var(--line);border-radius:.5rem}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid var(--line);overflow-wrap:anywhere}
td.num,th.num{text-align:right;white-space:nowrap}
.note{color:var(--muted)}
footer{max-width:60rem;margin:0 auto;padding:0 1rem 2rem;color:var(--muted);font-size:.85rem}
`;
