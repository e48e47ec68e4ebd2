/**
 * One page's Server-Sent Events stream, with a bound on what the server holds for it. Frames are
 * written while the response's buffer (what the socket has not taken yet) is under
 * `maxBufferedBytes`; once a page falls that far behind, updates for it are dropped — not queued —
 * and when its buffer drains it gets one full snapshot instead (a resync), so it ends up exactly
 * where the others are. A page that stays stalled for `stallTimeoutMs` is disconnected (its
 * `EventSource` reconnects and starts from a snapshot). At most the bound plus one frame is ever
 * buffered per page, whatever the poll rate.
 */
import type { ServerResponse } from 'node:http';

export interface SseStreamOptions {
  /** A page this many bytes behind gets no more updates until it catches up; default 1 MiB. */
  readonly maxBufferedBytes?: number;
  /** A page stalled this long is disconnected; default 60 000 ms. */
  readonly stallTimeoutMs?: number;
  /** Interval of keep-alive comments; default 15 000 ms. */
  readonly heartbeatMs?: number;
  /** The `retry:` hint to `EventSource`, in ms; default 1 000. */
  readonly reconnectMs?: number;
}

export function sseFrame(event: string, json: string): string {
  return `event: ${event}\ndata: ${json}\n\n`;
}

export class SseStream {
  readonly #res: ServerResponse;
  readonly #maxBuffered: number;
  readonly #stallTimeoutMs: number;
  /** The full frame a page that missed updates is sent when it catches up. */
  readonly #resyncFrame: () => string;
  readonly #heartbeat: NodeJS.Timeout;
  #stalled = false;
  #stallTimer: NodeJS.Timeout | undefined;
  /** Updates not sent because the page was behind. */
  dropped = 0;
  /** Full snapshots sent after the page caught up. */
  resyncs = 0;

  constructor(res: ServerResponse, options: SseStreamOptions, resyncFrame: () => string) {
    this.#res = res;
    // At least the response's high-water mark, so being over the bound always means a 'drain' will come.
    this.#maxBuffered = Math.max(options.maxBufferedBytes ?? 1024 * 1024, res.writableHighWaterMark);
    this.#stallTimeoutMs = options.stallTimeoutMs ?? 60_000;
    this.#resyncFrame = resyncFrame;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      // One stream per connection: ending it closes the socket, so server.close() is not held up.
      connection: 'close',
    });
    res.write(`retry: ${options.reconnectMs ?? 1_000}\n\n`);
    this.#heartbeat = setInterval(() => {
      if (!this.#stalled) this.#write(': keep-alive\n\n');
    }, options.heartbeatMs ?? 15_000);
    this.#heartbeat.unref();
  }

  /** Bytes written to the response that its socket has not taken yet. */
  get bufferedBytes(): number {
    return this.#res.writableLength;
  }

  /** Writes a frame that must arrive (the first snapshot), whatever is buffered. */
  sendAlways(frame: string): void {
    this.#write(frame);
  }

  /** Writes an update, or drops it (and owes the page a resync) while the page is behind. */
  send(frame: string): void {
    if (this.#res.destroyed) return;
    if (this.#stalled) {
      this.dropped++;
      return;
    }
    if (this.#res.writableLength > this.#maxBuffered) {
      this.dropped++;
      this.#stall();
      return;
    }
    this.#write(frame);
  }

  close(): void {
    clearInterval(this.#heartbeat);
    clearTimeout(this.#stallTimer);
    if (!this.#res.destroyed) this.#res.end();
  }

  #write(chunk: string): void {
    if (!this.#res.destroyed) this.#res.write(chunk);
  }

  #stall(): void {
    this.#stalled = true;
    this.#stallTimer = setTimeout(() => this.#res.destroy(), this.#stallTimeoutMs);
    this.#stallTimer.unref();
    this.#res.once('drain', () => {
      clearTimeout(this.#stallTimer);
      this.#stalled = false;
      if (this.#res.destroyed) return;
      this.resyncs++;
      this.#write(this.#resyncFrame());
    });
  }
}
