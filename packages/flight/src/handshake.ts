/**
 * The Handshake RPC: Flight SQL drivers log in with Basic auth (in the call's metadata, or as a
 * `BasicAuth` / bare token payload) and get the bearer token to send from then on, in an
 * `authorization: Bearer …` header and as the response payload (see `auth.ts`).
 */
import { Metadata, type ServerDuplexStream } from '@grpc/grpc-js';
import { clientStreamError, type FlightContext, report } from './calls.js';
import { FlightUnauthenticatedError } from './errors.js';
import { decodeBasicAuth } from './protocol.js';
import { text } from './requests.js';

export function handshake(context: FlightContext) {
  return (call: ServerDuplexStream<{ payload: Buffer }, unknown>): void => {
    let answered = false;
    const answer = (payload: Buffer | undefined) => {
      if (answered) return;
      answered = true;
      const token = context.admitted(
        call.metadata,
        payload === undefined ? undefined : (decodeBasicAuth(payload)?.password ?? text(payload)),
      );
      if (token === undefined) {
        call.emit('error', report(context, new FlightUnauthenticatedError(), 'Handshake'));
        return;
      }
      const headers = new Metadata();
      headers.set('authorization', `Bearer ${token}`);
      call.sendMetadata(headers);
      call.write({ protocolVersion: 0, payload: Buffer.from(token) });
      call.end();
    };
    call.on('data', (request: { payload: Buffer }) =>
      answer(request.payload.length === 0 ? undefined : request.payload),
    );
    call.on('end', () => answer(undefined));
    call.on('error', clientStreamError(context, 'Handshake'));
  };
}
