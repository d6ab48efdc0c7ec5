import { Style, paint } from './style';

/** A table cell: its text, and how to colour it on a terminal. */
export type Cell = string | { text: string; style?: Style };

export interface Column {
  header: string;
  /** Numbers read best right-aligned. */
  align?: 'left' | 'right';
}

function textOf(cell: Cell): string {
  return typeof cell === 'string' ? cell : cell.text;
}

/**
 * Rows as an aligned table, columns two spaces apart, the header first (bold on a terminal).
 * Widths count characters, never colour codes, so colour does not break the alignment.
 */
export function formatTable(columns: Column[], rows: Cell[][], colour: boolean): string {
  const widths = columns.map((column, index) =>
    Math.max(column.header.length, ...rows.map((row) => textOf(row[index] ?? '').length)),
  );
  const line = (cells: Cell[], header: boolean): string =>
    columns
      .map((column, index) => {
        const cell = cells[index] ?? '';
        const text = textOf(cell);
        const padding = ' '.repeat(widths[index] - text.length);
        const style = header ? 'bold' : typeof cell === 'string' ? undefined : cell.style;
        const painted = paint(text, style, colour);
        return column.align === 'right' ? padding + painted : painted + padding;
      })
      .join('  ')
      .trimEnd();
  return [
    line(
      columns.map((column) => column.header),
      true,
    ),
    ...rows.map((row) => line(row, false)),
  ].join('\n');
}

/** `label: value` lines, the values aligned. */
export function formatFields(fields: Array<[string, Cell]>, colour: boolean): string {
  const width = Math.max(...fields.map(([label]) => label.length)) + 1;
  return fields
    .map(([label, cell]) => {
      const text = typeof cell === 'string' ? cell : paint(cell.text, cell.style, colour);
      return `${`${label}:`.padEnd(width)}  ${text}`;
    })
    .join('\n');
}

/**
 * A bar of `width` characters: `used` of `used + free` filled (#), the rest dots. Coloured by
 * how full it is on a terminal: green, then yellow from 75 %, red from 90 %.
 */
export function formatBar(used: number, free: number, width: number, colour: boolean): string {
  const total = used + free;
  const fraction = total > 0 ? Math.min(1, Math.max(0, used / total)) : 0;
  const filled = Math.round(fraction * width);
  const style: Style = fraction >= 0.9 ? 'red' : fraction >= 0.75 ? 'yellow' : 'green';
  return `[${paint('#'.repeat(filled), style, colour)}${'.'.repeat(width - filled)}]`;
}
