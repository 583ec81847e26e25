/** Vite's `?raw` imports: a file's text (tests that hold docs to the code read them so). */
declare module "*.md?raw" {
  const text: string;
  export default text;
}
