import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Response } from 'express';

type Reply = (response: Response, body: unknown, statusCode?: number) => unknown;

/**
 * Answers a handler returns as one constant object (a heartbeat's `{"accepted":true}`, most of
 * what the controller sends) are written as text serialized once, with the headers Express's
 * res.json gives them: Content-Type `application/json; charset=utf-8` and Content-Length.
 * res.json would stringify the object, then parse and rebuild the Content-Type to add its
 * charset, for each heartbeat (a tenth of its CPU past validation). Any other answer, a HEAD or
 * GET (freshness), a status whose body Express strips, a Content-Type already set, or an app
 * with ETags goes the usual way. Nothing that handles res.json sees these answers: only give
 * constants no such hook looks for.
 */
export function replyConstantsSerialized(
  app: NestExpressApplication,
  constants: readonly object[],
): void {
  // Text, not a Buffer: node:http joins text to the headers (a Buffer is written apart).
  const serialized = new Map<unknown, { text: string; length: number }>(
    constants.map((answer) => {
      const text = JSON.stringify(answer);
      return [answer, { text, length: Buffer.byteLength(text) }];
    }),
  );
  const adapter = app.getHttpAdapter() as unknown as { reply: Reply };
  const reply: Reply = adapter.reply.bind(adapter);
  adapter.reply = (response, body, statusCode) => {
    const answer = serialized.get(body);
    if (answer === undefined) return reply(response, body, statusCode);
    if (statusCode) response.status(statusCode);
    const method = response.req.method;
    if (
      response.statusCode !== 200 ||
      method === 'GET' ||
      method === 'HEAD' ||
      response.getHeader('Content-Type') !== undefined ||
      typeof response.app.get('etag fn') === 'function'
    ) {
      return reply(response, body);
    }
    response.setHeader('Content-Type', 'application/json; charset=utf-8');
    response.setHeader('Content-Length', answer.length);
    // One write for the headers and the body: end(text) always adds an empty chunk behind
    // them, and the two go out as a writev (about a twentieth of a heartbeat's CPU on a real
    // socket). write() corks the socket until the next tick: uncorked now, it sends the one
    // chunk, and end() usually finds nothing left to send (else it sends the rest, as ever).
    response.write(answer.text, 'utf8');
    response.socket?.uncork();
    return response.end();
  };
}
