import type { FileHandle } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { StartReplicaTransfer } from '@app/fleet-domain';

/** A transfer that has not moved for this long is given up (its partial file removed). */
export const TRANSFER_IDLE_MS = 10 * 60_000;

/** One file of a VM's copy being received, in chunks, into its `.partial` file. */
export interface Transfer {
  id: string;
  vmId: string;
  source: string;
  request: StartReplicaTransfer;
  chainId: string;
  chainDir: string;
  /** A full copy made its chain's folder: removed with it when the transfer fails. */
  newChain: boolean;
  partial: string;
  index: number;
  received: number;
  lastMoveMs: number;
  /** A chunk being written: the next waits (one at a time, in order). */
  busy: boolean;
}

/** Writes the body at `offset`, at most `length` bytes; the bytes it really carried. */
export async function appendBody(
  handle: FileHandle,
  offset: number,
  length: number,
  body: Readable,
): Promise<number> {
  let written = 0;
  for await (const chunk of body) {
    const bytes = chunk as Buffer;
    if (written + bytes.length > length) throw new Error('more bytes than Content-Length');
    await handle.write(bytes, 0, bytes.length, offset + written);
    written += bytes.length;
  }
  return written;
}
