/**
 * A WebSocket client that carries inspection messages to a Stately inspector (an
 * `@statelyai/inspect` adapter). It exists instead of the package's own WebSocket adapter for
 * three reasons that matter in a long-running server: that adapter reconnects only after an error
 * (not after the receiver closes the connection), replays its whole backlog on every reconnect,
 * and keeps retrying after `stop()`. This one reconnects after any close with a backoff, sends a
 * bounded backlog once, lets the owner re-announce its actors first (`onOpen`), and stops for good.
 */
import { backoffDelayMs } from '@ferry/core/base';
import { WebSocket } from 'ws';

export interface WebSocketTransportOptions {
  readonly url: string;
  /** Messages kept while disconnected (oldest dropped first); default 1 000. */
  readonly maxQueued?: number;
  /**
   * Bytes an open connection may hold unsent; default 8 MiB. A receiver that falls further behind
   * (it stopped reading) is disconnected rather than buffered for without bound; the reconnection
   * lets the owner announce again (`onOpen`).
   */
  readonly maxBufferedBytes?: number;
  /** Delays before reconnect attempts 1, 2, …; the last repeats; default 500 ms … 10 s. */
  readonly reconnectDelaysMs?: readonly number[];
  /** Called on every (re)connection, before the backlog is flushed; sends made here go first. */
  readonly onOpen?: () => void;
  /** Called when a connection attempt fails or an open connection ends. */
  readonly onDisconnect?: (reason: string, wasOpen: boolean) => void;
}

const DEFAULT_DELAYS = [500, 1_000, 2_000, 5_000, 10_000];

export class WebSocketTransport {
  readonly url: string;
  readonly #maxQueued: number;
  readonly #maxBuffered: number;
  readonly #delays: readonly number[];
  readonly #onOpen: (() => void) | undefined;
  readonly #onDisconnect: ((reason: string, wasOpen: boolean) => void) | undefined;
  readonly #queue: string[] = [];
  #socket: WebSocket | undefined;
  #open = false;
  #attempt = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /** The open connection was dropped for a receiver that stopped reading. */
  #stalled = false;
  #dropped = 0;

  constructor(options: WebSocketTransportOptions) {
    this.url = options.url;
    this.#maxQueued = options.maxQueued ?? 1_000;
    this.#maxBuffered = options.maxBufferedBytes ?? 8 * 1024 * 1024;
    this.#delays = options.reconnectDelaysMs ?? DEFAULT_DELAYS;
    this.#onOpen = options.onOpen;
    this.#onDisconnect = options.onDisconnect;
  }

  /** True while a connection is open. */
  get connected(): boolean {
    return this.#open;
  }

  /** Messages dropped because the backlog was full while disconnected. */
  /** Bytes written to the open connection that it has not sent yet. */
  get bufferedBytes(): number {
    return this.#socket?.bufferedAmount ?? 0;
  }

  get dropped(): number {
    return this.#dropped;
  }

  start(): void {
    if (this.#stopped || this.#socket !== undefined) return;
    this.#connect();
  }

  /** Sends `message` as JSON now, or queues it until the next connection. */
  send(message: unknown): void {
    if (this.#stopped) return;
    const text = JSON.stringify(message);
    const socket = this.#socket;
    if (this.#open && socket !== undefined) {
      if (socket.bufferedAmount <= this.#maxBuffered) {
        socket.send(text);
        return;
      }
      // The receiver stopped reading: what follows waits in the bounded queue for the reconnection.
      this.#open = false;
      this.#stalled = true;
      socket.terminate();
    }
    this.#queue.push(text);
    if (this.#queue.length > this.#maxQueued) {
      this.#queue.shift();
      this.#dropped++;
    }
  }

  /** Closes the connection (after what was sent) and never reconnects; resolves once closed. */
  stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#queue.length = 0;
    const socket = this.#socket;
    if (socket === undefined || socket.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const force = setTimeout(() => socket.terminate(), 1_000);
      force.unref();
      socket.once('close', () => {
        clearTimeout(force);
        resolve();
      });
      if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
      else socket.close(1000, 'inspector bridge stopped');
    });
  }

  #connect(): void {
    const socket = new WebSocket(this.url);
    this.#socket = socket;
    let lastError = '';
    socket.on('open', () => {
      if (this.#stopped) return;
      this.#open = true;
      this.#attempt = 0;
      this.#onOpen?.();
      for (const text of this.#queue.splice(0)) socket.send(text);
    });
    socket.on('error', (error) => {
      lastError = error.message;
    });
    // The receiver's messages (if any) are not for us.
    socket.on('message', () => undefined);
    socket.on('close', (code) => {
      const wasOpen = this.#open || this.#stalled;
      if (this.#stalled) lastError = `the receiver stopped reading: over ${this.#maxBuffered} bytes unsent`;
      this.#stalled = false;
      this.#open = false;
      this.#socket = undefined;
      if (this.#stopped) return;
      this.#onDisconnect?.(lastError || `closed with code ${code}`, wasOpen);
      this.#attempt++;
      const delay = backoffDelayMs({ kind: 'steps', delaysMs: this.#delays }, this.#attempt);
      this.#timer = setTimeout(() => this.#connect(), delay);
      this.#timer.unref();
    });
  }
}
