import { Html, escapeHtml, html } from './html';

// Under another name, so Prettier leaves these templates' exact text alone.
const tag = html;

describe('console HTML', () => {
  it('escapes every character that could end text or an attribute', () => {
    expect(escapeHtml(`<img src=x onerror="alert(1)">'&\``)).toBe(
      '&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&#39;&amp;&#96;',
    );
  });

  it('escapes interpolated text and keeps built HTML as it is', () => {
    const hostname = '<img src=x onerror=alert(1)>';
    const cell = tag`<td title="${hostname}">${hostname}</td>`;
    expect(cell.text).toBe(
      '<td title="&lt;img src=x onerror=alert(1)&gt;">&lt;img src=x onerror=alert(1)&gt;</td>',
    );
    expect(tag`<tr>${cell}</tr>`.text).toBe(`<tr>${cell.text}</tr>`);
  });

  it('joins lists, prints numbers, and leaves out null, undefined and false', () => {
    const items = ['a<', 'b'].map((item) => tag`<li>${item}</li>`);
    expect(tag`<ul>${items}</ul>${null}${undefined}${false}${0}`.text).toBe(
      '<ul><li>a&lt;</li><li>b</li></ul>0',
    );
  });

  it('does not take a string for HTML, whatever it looks like', () => {
    const forged = { text: '<script>' } as unknown as string;
    expect(tag`${forged}`.text).toBe('[object Object]');
    expect(new Html('<b>').toString()).toBe('<b>');
  });
});
