import { request as httpRequest } from 'node:http';

/** How long the new node may take to answer that it gave the move up (its roll-back included). */
export const GIVE_UP_TIMEOUT_MS = 60_000;

/**
 * The new node's word once the old node's part of a move failed or went silent (its agent
 * killed, the mesh between them cut): `runs-there` (409: its QEMU had received the whole guest,
 * which is then that node's, and runs it), `rolled-back` (2xx: nothing of it left there), or
 * `unknown` (no answer, or another one), with what was seen for the log.
 */
export type TargetWord =
  { kind: 'runs-there' } | { kind: 'rolled-back' } | { kind: 'unknown'; detail: string };

/**
 * DELETE /v1/moves/{vm_id}/incoming on the new node, with the move's grant (the controller
 * signed it for that node): what the old node would have said on giving up, said by the
 * controller, which reaches both nodes even when they no longer reach each other. Only the
 * answer's status is read: nothing of the reply is relayed.
 */
export function askTargetToGiveUp(
  target: { host: string; port: number },
  vmId: string,
  grant: string,
  timeoutMs = GIVE_UP_TIMEOUT_MS,
): Promise<TargetWord> {
  return new Promise((resolve) => {
    const request = httpRequest(
      {
        host: target.host,
        port: target.port,
        method: 'DELETE',
        path: `/v1/moves/${encodeURIComponent(vmId)}/incoming`,
        headers: { Authorization: `Bearer ${grant}` },
        timeout: timeoutMs,
      },
      (response) => {
        const status = response.statusCode ?? 0;
        response.resume();
        if (status === 409) resolve({ kind: 'runs-there' });
        else if (status >= 200 && status < 300) resolve({ kind: 'rolled-back' });
        else resolve({ kind: 'unknown', detail: `it answered ${status}` });
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', (error) =>
      resolve({ kind: 'unknown', detail: `it could not be reached (${error.message})` }),
    );
    request.end();
  });
}
