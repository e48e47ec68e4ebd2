/**
 * Upload progress for `ferry publish`: a bar redrawn in place on a terminal, and on anything else
 * (a pipe, a CI log) a plain line at each 25% so logs stay short.
 */

export interface ProgressOutput {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

export interface Progress {
  update(bytes: number, total: number): void;
  /** Ends the bar's line (if one was drawn). */
  done(): void;
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

export function createProgress(output: ProgressOutput, label: string): Progress {
  let drawn = false;
  let lastQuarter = -1;
  let lastDrawMs = 0;
  return {
    update(bytes, total) {
      const fraction = total > 0 ? Math.min(1, bytes / total) : 1;
      const percent = Math.floor(fraction * 100);
      if (output.isTTY === true) {
        const now = Date.now();
        if (drawn && fraction < 1 && now - lastDrawMs < 50) return;
        lastDrawMs = now;
        const width = Math.max(10, Math.min(40, (output.columns ?? 80) - label.length - 40));
        const filled = Math.round(fraction * width);
        const bar = `${'#'.repeat(filled)}${'-'.repeat(width - filled)}`;
        output.write(
          `\r${label} [${bar}] ${String(percent).padStart(3)}% ${formatBytes(bytes)} / ${formatBytes(total)}`,
        );
        drawn = true;
        return;
      }
      const quarter = Math.floor(percent / 25);
      if (quarter > lastQuarter) {
        lastQuarter = quarter;
        output.write(`${label}: ${percent}% (${formatBytes(bytes)} of ${formatBytes(total)})\n`);
      }
    },
    done() {
      if (drawn) output.write('\n');
      drawn = false;
    },
  };
}
