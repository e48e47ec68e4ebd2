/** Number formatting shared by the console, Markdown and SVG output. */
import type { Unit } from './scenario.js';

function significant(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (value === 0) return '0';
  const magnitude = Math.floor(Math.log10(Math.abs(value)));
  const decimals = Math.max(0, digits - 1 - magnitude);
  return value.toFixed(Math.min(decimals, 4));
}

export function formatValue(value: number, unit: Unit): string {
  if (!Number.isFinite(value)) return 'n/a';
  switch (unit) {
    case 'ops/s':
      return `${value >= 100 ? Math.round(value).toLocaleString('en-US') : significant(value)} ops/s`;
    case 'count':
      return Number.isInteger(value) ? String(value) : significant(value);
    case 'x':
      return formatRatio(value);
    case '%':
      return `${significant(value)} %`;
    default:
      return `${value >= 1000 ? Math.round(value).toLocaleString('en-US') : significant(value)} ${unit}`;
  }
}

export function formatRatio(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)}×` : 'n/a';
}
