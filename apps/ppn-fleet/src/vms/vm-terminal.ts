import { WebSocketRefusedError, openWebSocket } from '@app/daemon';
import { OPS_ENDPOINT_HINT, refusal } from '../api/fleet-api.client';
import { CliFailure, ExitCode } from '../api/exit-codes';
import type { OutputStream } from '../terminal/cli-io';
import { printable } from '../terminal/printable';
import { LEAVE_KEY, SerialOutputFilter } from '../terminal/serial-output';

/** How long the connection and the controller's and agent's handshakes may take. */
const OPEN_TIMEOUT_MS = 15_000;
/** Most one message from the controller may carry (its relay sends at most 64 KiB). */
const MAX_OUTPUT_MESSAGE_BYTES = 64 * 1024;
/** Most of the keyboard sent in one message (a paste): the listener refuses more than 16 KiB. */
const MAX_INPUT_MESSAGE_BYTES = 8 * 1024;

export interface InteractiveConsole {
  vmId: string;
  opsEndpoint: string;
  apiToken?: string;
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WritableStream;
  stderr: OutputStream;
}

/**
 * `ppn-fleet vm console <vm_id> --interactive`: the VM's serial port in this terminal, through
 * the operations listener's WebSocket (GET /v1/vms/{vm_id}/terminal, the API token), until
 * Ctrl-] or the other side closes. The keyboard goes in raw (Ctrl-C reaches the guest); the
 * guest's output comes out with string sequences (titles, clipboard writes) dropped.
 */
export async function runInteractiveConsole(run: InteractiveConsole): Promise<void> {
  const endpoint = new URL(run.opsEndpoint);
  if (endpoint.protocol !== 'http:') {
    throw new CliFailure(
      `--interactive speaks plain HTTP to the operations listener (it has no TLS): ${run.opsEndpoint} is not http://`,
      ExitCode.Usage,
    );
  }
  const base = endpoint.pathname.replace(/\/+$/, '');
  const url = new URL(`${base}/v1/vms/${encodeURIComponent(run.vmId)}/terminal`, endpoint);
  let ws;
  try {
    ws = await openWebSocket({
      url,
      timeoutMs: OPEN_TIMEOUT_MS,
      maxMessageBytes: MAX_OUTPUT_MESSAGE_BYTES,
      headers: {
        'Sec-WebSocket-Protocol': 'ppn-terminal',
        ...(run.apiToken === undefined ? {} : { Authorization: `Bearer ${run.apiToken}` }),
      },
    });
  } catch (error) {
    if (error instanceof WebSocketRefusedError) {
      throw refusal(
        error.status,
        error.refusal === undefined ? undefined : { message: error.refusal },
      );
    }
    const code = (error as { code?: unknown }).code;
    const problem =
      typeof code === 'string' ? code : error instanceof Error ? error.message : String(error);
    throw new CliFailure(
      `cannot reach the controller's operations listener at ${run.opsEndpoint}: ${problem}${code === 'ECONNREFUSED' ? OPS_ENDPOINT_HINT : ''}`,
      ExitCode.Unreachable,
    );
  }
  const { stdin, stdout, stderr } = run;
  const raw = stdin.isTTY === true;
  stderr.write(`--- vm ${printable(run.vmId)}: serial console; Ctrl-] leaves ---\r\n`);
  const filter = new SerialOutputFilter();
  ws.onMessage((data) => stdout.write(filter.filter(data)));
  const keys = (chunk: Buffer): void => {
    const leave = chunk.indexOf(LEAVE_KEY);
    const sent = leave >= 0 ? chunk.subarray(0, leave) : chunk;
    for (let at = 0; at < sent.length; at += MAX_INPUT_MESSAGE_BYTES) {
      ws.send(sent.subarray(at, at + MAX_INPUT_MESSAGE_BYTES));
    }
    if (leave >= 0) ws.close(1000, 'left with Ctrl-]');
  };
  const closed = new Promise<string>((resolve) => ws.onClose((_code, reason) => resolve(reason)));
  if (raw) stdin.setRawMode(true);
  stdin.on('data', keys);
  stdin.resume();
  try {
    await closed;
  } finally {
    stdin.off('data', keys);
    if (raw) stdin.setRawMode(false);
    stdin.pause();
  }
  stderr.write(`\r\n--- vm ${printable(run.vmId)}: left its serial console ---\n`);
}
