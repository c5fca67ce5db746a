/**
 * HTML for the web pages, built so that escaping is the default: every value interpolated into an
 * `html` template is escaped unless it is itself `Html`. A page therefore cannot forget to escape a
 * project, media or composition name (all user-chosen, `<script>` included).
 */

export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export type HtmlPart = Html | string | number | null | undefined | false | readonly HtmlPart[];

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ENTITIES[c]);

function render(part: HtmlPart): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof Html) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...parts: HtmlPart[]): Html {
  let out = strings[0];
  for (let i = 0; i < parts.length; i++) out += render(parts[i]) + strings[i + 1];
  return new Html(out);
}

/** Seconds as `m:ss.t` (`1:05.3`), or `h:mm:ss.t` from an hour on. */
export function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds)) return '—';
  // Rounded once, to tenths, so 59.96 reads 1:00.0 rather than 0:60.0.
  const tenths = Math.max(0, Math.round(seconds * 10));
  const h = Math.floor(tenths / 36_000);
  const m = Math.floor((tenths % 36_000) / 600);
  const s = ((tenths % 600) / 10).toFixed(1).padStart(4, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

/** An ISO timestamp as `2025-01-31 14:05:09 UTC`; anything else as it is. */
export function formatTimestamp(iso: unknown): string {
  const text = String(iso ?? '');
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?Z$/.exec(text);
  return m ? `${m[1]} ${m[2]} UTC` : text;
}

const STYLE = `
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:1rem 1.5rem;color:#1d1d1f}
h1{margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #ddd}
.muted{color:#666}.error{color:#a40000}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.25rem .6rem .25rem 0;border-bottom:1px solid #eee;vertical-align:top}
section.composition{border:1px solid #ddd;border-radius:6px;padding:.2rem 1rem;margin:1rem 0}
section.focus{border:2px solid #0a66c2;background:#f4f8fd}
.tc{font-family:ui-monospace,monospace;color:#666;margin-right:.5rem}.speaker{font-weight:600}
form.inline{display:inline}input[type=password]{width:28rem;max-width:100%}
`;

/** A whole page: the one place the document shell and its inline style (allowed by the CSP) live; `head`: more `<meta>`s. */
export const layout = (title: string, body: Html, head?: Html): Html =>
  html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · Media Project Service</title>
        ${head}
        <style>
          ${new Html(STYLE)}
        </style>
      </head>
      <body>
        ${body}
      </body>
    </html> `;
