/**
 * Dependency-free SVG charts for the results folder: paired bars (Ferry against its baseline, each
 * row on its own scale since units differ) and, for the soak run, lines over time.
 */
import { formatRatio, formatValue } from './format.js';
import type { LineChart, Measurement } from './scenario.js';

const FERRY = '#2b6cb0';
const BASE = '#a0aec0';
const COLORS = ['#2b6cb0', '#c05621', '#2f855a', '#6b46c1'];

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Labels longer than the label column are cut (the Markdown table has them whole). */
function clip(label: string, max = 74): string {
  return label.length > max ? `${label.slice(0, max - 1)}…` : label;
}

function text(x: number, y: number, content: string, attributes = ''): string {
  return `<text x="${x}" y="${y}" ${attributes}>${escapeXml(content)}</text>`;
}

export function barChart(title: string, measurements: readonly Measurement[]): string {
  const width = 1120;
  const labelWidth = 500;
  const barWidth = 460;
  const rowHeight = 40;
  const top = 56;
  const height = top + measurements.length * rowHeight + 20;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    text(12, 22, title, 'font-size="16" font-weight="bold"'),
    `<rect x="${labelWidth}" y="32" width="12" height="10" fill="${FERRY}"/>`,
    text(labelWidth + 16, 41, 'Ferry'),
    `<rect x="${labelWidth + 70}" y="32" width="12" height="10" fill="${BASE}"/>`,
    text(labelWidth + 86, 41, 'baseline (same run)'),
  ];
  measurements.forEach((m, index) => {
    const y = top + index * rowHeight;
    const scale = Math.max(Math.abs(m.value), Math.abs(m.baseline ?? 0)) || 1;
    const ferryWidth = Number.isFinite(m.value) ? (Math.abs(m.value) / scale) * barWidth : 0;
    parts.push(
      text(12, y + 12, clip(m.group), 'font-weight="bold"'),
      text(12, y + 26, clip(m.metric), 'fill="#4a5568"'),
    );
    parts.push(
      `<rect x="${labelWidth}" y="${y}" width="${ferryWidth.toFixed(1)}" height="14" fill="${FERRY}"/>`,
    );
    parts.push(text(labelWidth + ferryWidth + 4, y + 11, formatValue(m.value, m.unit)));
    if (m.baseline !== undefined) {
      const baseWidth = Number.isFinite(m.baseline) ? (Math.abs(m.baseline) / scale) * barWidth : 0;
      parts.push(
        `<rect x="${labelWidth}" y="${y + 16}" width="${baseWidth.toFixed(1)}" height="14" fill="${BASE}"/>`,
      );
      parts.push(text(labelWidth + baseWidth + 4, y + 27, formatValue(m.baseline, m.unit)));
    }
    if (m.ratio !== undefined) {
      parts.push(text(width - 12, y + 20, formatRatio(m.ratio), 'text-anchor="end" font-weight="bold"'));
    }
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

export function lineChart(chart: LineChart): string {
  const width = 960;
  const height = 420;
  const left = 70;
  const right = 20;
  const top = 50;
  const bottom = 50;
  const points = chart.series.flatMap((series) => series.points);
  const xs = points.map((point) => point[0]);
  const ys = points.map((point) => point[1]);
  const xMin = Math.min(...xs, 0);
  const xMax = Math.max(...xs, 1);
  const yMin = 0;
  const yMax = Math.max(...ys, 1) * 1.1;
  const px = (x: number) => left + ((x - xMin) / (xMax - xMin || 1)) * (width - left - right);
  const py = (y: number) => height - bottom - ((y - yMin) / (yMax - yMin || 1)) * (height - top - bottom);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    text(12, 22, chart.title, 'font-size="16" font-weight="bold"'),
    `<line x1="${left}" y1="${height - bottom}" x2="${width - right}" y2="${height - bottom}" stroke="#718096"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${height - bottom}" stroke="#718096"/>`,
    text(width / 2, height - 12, chart.xLabel, 'text-anchor="middle"'),
    text(12, top - 8, chart.yLabel),
  ];
  for (let tick = 0; tick <= 4; tick++) {
    const value = yMin + ((yMax - yMin) * tick) / 4;
    parts.push(text(left - 6, py(value) + 4, value.toFixed(0), 'text-anchor="end"'));
    const x = xMin + ((xMax - xMin) * tick) / 4;
    parts.push(text(px(x), height - bottom + 16, x.toFixed(0), 'text-anchor="middle"'));
  }
  chart.series.forEach((series, index) => {
    const color = COLORS[index % COLORS.length] ?? FERRY;
    const path = series.points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(' ');
    parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${path}"/>`);
    parts.push(`<rect x="${left + 10 + index * 180}" y="30" width="12" height="10" fill="${color}"/>`);
    parts.push(text(left + 26 + index * 180, 39, series.name));
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
