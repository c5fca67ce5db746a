/** What commands print: the API's JSON as it is with --json, else short aligned text for people. */

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Text from the API (a project's name, a job's error) made safe for a terminal: C0 and C1 control
 * characters (an escape sequence that recolours, retitles or moves the cursor; a newline that fakes
 * a table row) become visible escapes such as `\x1b` and `\n`. A backslash is left alone: it
 * controls nothing.
 */
export function visible(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => {
    const code = c.charCodeAt(0);
    return SHORT_ESCAPES.get(c) ?? `\\x${code.toString(16).padStart(2, '0')}`;
  });
}

const SHORT_ESCAPES = new Map([
  ['\n', '\\n'],
  ['\r', '\\r'],
  ['\t', '\\t'],
]);

/** A cell already made safe, that may carry styles of ours (the bold of `plainSnippet`). */
export type SafeCell = { safe: string };

/** Rows as aligned columns under a header; `empty` when there is no row. Text cells are shown `visible`. */
export function printTable(headers: string[], cells: (string | SafeCell)[][], empty: string): void {
  if (cells.length === 0) {
    process.stdout.write(`${empty}\n`);
    return;
  }
  const rows = cells.map((r) => r.map((cell) => (typeof cell === 'string' ? visible(cell) : cell.safe)));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${[line(headers), ...rows.map(line)].join('\n')}\n`);
}

/** `key: value` lines, keys aligned, empty values left out, values shown `visible`. */
export function printFields(fields: [string, string | number | boolean | undefined | null][]): void {
  const shown = fields.filter(([, v]) => v !== undefined && v !== null && v !== '');
  const width = Math.max(...shown.map(([k]) => k.length));
  process.stdout.write(`${shown.map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${visible(String(v))}`).join('\n')}\n`);
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };

/**
 * A search snippet (HTML-escaped text with each matched word in `<mark>`) for a terminal: the
 * matches in bold where `bold` (stdout is a terminal and NO_COLOR is not set), else in [brackets].
 */
export function plainSnippet(snippet: string, bold: boolean): string {
  const [open, close] = bold ? ['\x1b[1m', '\x1b[22m'] : ['[', ']'];
  const text = (escaped: string) => visible(escaped.replace(/&(?:amp|lt|gt|quot|#39);/g, (entity) => ENTITIES[entity]));
  // The text made visible piece by piece, so that only our own styles reach the terminal.
  return snippet
    .split(/(<mark>.*?<\/mark>)/)
    .map((piece) => (piece.startsWith('<mark>') ? `${open}${text(piece.slice(6, -7))}${close}` : text(piece)))
    .join('');
}

/** Whether stdout may carry terminal styles (https://no-color.org). */
export const stylesOnStdout = (): boolean => Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;

/** Progress and notes go to stderr, so stdout stays the command's answer; API text in them is shown `visible`. */
export function note(text: string): void {
  process.stderr.write(`${visible(text)}\n`);
}

export function formatBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i += 1;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}
