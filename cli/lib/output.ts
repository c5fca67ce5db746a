/** What commands print: the API's JSON as it is with --json, else short aligned text for people. */

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Rows as aligned columns under a header; `empty` when there is no row. */
export function printTable(headers: string[], rows: string[][], empty: string): void {
  if (rows.length === 0) {
    process.stdout.write(`${empty}\n`);
    return;
  }
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${[line(headers), ...rows.map(line)].join('\n')}\n`);
}

/** `key: value` lines, keys aligned, empty values left out. */
export function printFields(fields: [string, string | number | boolean | undefined | null][]): void {
  const shown = fields.filter(([, v]) => v !== undefined && v !== null && v !== '');
  const width = Math.max(...shown.map(([k]) => k.length));
  process.stdout.write(`${shown.map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${v}`).join('\n')}\n`);
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };

/**
 * A search snippet (HTML-escaped text with each matched word in `<mark>`) for a terminal: the
 * matches in bold where `bold` (stdout is a terminal and NO_COLOR is not set), else in [brackets].
 */
export function plainSnippet(snippet: string, bold: boolean): string {
  const [open, close] = bold ? ['\x1b[1m', '\x1b[22m'] : ['[', ']'];
  return snippet
    .replace(/<mark>(.*?)<\/mark>/g, (_, word: string) => `${open}${word}${close}`)
    .replace(/&(?:amp|lt|gt|quot|#39);/g, (entity) => ENTITIES[entity]);
}

/** Whether stdout may carry terminal styles (https://no-color.org). */
export const stylesOnStdout = (): boolean => Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;

/** Progress and notes go to stderr, so stdout stays the command's answer. */
export function note(text: string): void {
  process.stderr.write(`${text}\n`);
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
