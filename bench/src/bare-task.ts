/**
 * A piscina task that returns its argument: run through a pool set up like the SQLite read pool
 * (atomics 'sync', the same thread count), its round trip is the floor of the pool's hop (B1's
 * SQLite path).
 */
export default function bareTask(message: unknown): unknown {
  return message;
}
