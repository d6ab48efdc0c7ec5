import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/** One POST to an etcd endpoint, with a deadline and a bounded reply. */

/** One call's deadline, per endpoint tried. */
const CALL_TIMEOUT_MS = 2_000;
/** Largest reply body read: a listing of every node stays far below. */
const MAX_REPLY_BYTES = 64 * 1024 * 1024;
/** Largest error text kept from an etcd reply, for the log only. */
const MAX_ERROR_TEXT = 200;

/** A refusal by etcd itself (it answered, with an error): not worth trying another endpoint. */
export class EtcdRefusal extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(detail);
  }
}

/** One POST with a deadline: the reply's JSON, or EtcdRefusal for an error etcd answered. */
export function post(
  agents: { http: HttpAgent; https: HttpsAgent },
  endpoint: string,
  path: string,
  body: unknown,
  token?: string,
): Promise<unknown> {
  const url = new URL(path, endpoint);
  const payload = Buffer.from(JSON.stringify(body));
  const https = url.protocol === 'https:';
  const send = https ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method: 'POST',
        agent: https ? agents.https : agents.http,
        timeout: CALL_TIMEOUT_MS,
        headers: {
          'content-type': 'application/json',
          'content-length': payload.length,
          ...(token && { authorization: token }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_REPLY_BYTES) {
            req.destroy(new Error(`reply larger than ${MAX_REPLY_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            reject(new Error(`HTTP ${res.statusCode}, no JSON reply: not etcd's v3 gateway?`));
            return;
          }
          const status = res.statusCode ?? 0;
          const error = (parsed as { error?: unknown; message?: unknown }) ?? {};
          if (status !== 200 || typeof error.error === 'string') {
            const said = [error.message, error.error].find((text) => typeof text === 'string');
            const detail = (said ?? '').slice(0, MAX_ERROR_TEXT);
            reject(new EtcdRefusal(status, detail));
            return;
          }
          resolve(parsed);
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${CALL_TIMEOUT_MS} ms`)));
    req.on('error', (error: NodeJS.ErrnoException) => reject(new Error(describeNetError(error))));
    req.end(payload);
  });
}

/** A connection's failure in a few words: its code, and what a TLS one means. */
function describeNetError(error: NodeJS.ErrnoException): string {
  const code = error.code ?? error.message;
  if (/CERT|SIGNATURE|SELF_SIGNED|ISSUER/.test(code))
    return `${code}: its certificate is not trusted (VM_FLEET_ETCD_CA_FILE names the CA that signed it)`;
  if (/ALERT_CERTIFICATE_REQUIRED|ALERT_BAD_CERTIFICATE|ALERT_UNKNOWN_CA/.test(code))
    return `${code}: it refused the controller's certificate (VM_FLEET_ETCD_CERT_FILE and VM_FLEET_ETCD_KEY_FILE)`;
  return code;
}
