/**
 * HTML built from templates where every interpolated value is escaped unless it is already
 * `Html` (built the same way): the console shows what nodes send (hostnames, VM types, tenants,
 * reasons), and all of it is attacker-controlled.
 */
export class Html {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

/** What a template may interpolate: text (escaped), numbers, HTML, lists of them, or nothing. */
export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Text made safe for an element's content and for a quoted attribute value alike. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (character) => ESCAPES[character]);
}

function render(value: HtmlValue): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** The tagged template: `html\`<td>${hostname}</td>\`` escapes the hostname. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let text = strings[0];
  values.forEach((value, index) => {
    text += render(value) + strings[index + 1];
  });
  return new Html(text);
}

/** A path segment or query value for a link: percent-encoded (and escaped where it is put). */
export function pathPart(value: string): string {
  return encodeURIComponent(value);
}
