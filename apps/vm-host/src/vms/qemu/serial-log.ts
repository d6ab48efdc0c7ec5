import { Logger } from '@nestjs/common';
import { open, stat } from 'node:fs/promises';
import { MAX_CONSOLE_BYTES } from '@app/fleet-domain';
import { SERIAL_LOG_MAX_BYTES } from './qemu-record';

/**
 * Past SERIAL_LOG_MAX_BYTES, the log is cut to its last MAX_CONSOLE_BYTES (QEMU appends to
 * it, so its next line lands after them); a follower of the console sees it start over.
 */
export async function capSerialLog(log: string, vmId: string, logger: Logger): Promise<void> {
  const size = await stat(log).then(
    (found) => found.size,
    () => 0,
  );
  if (size <= SERIAL_LOG_MAX_BYTES) return;
  const handle = await open(log, 'r+');
  try {
    const tail = Buffer.alloc(MAX_CONSOLE_BYTES);
    const { bytesRead } = await handle.read(tail, 0, tail.length, size - tail.length);
    await handle.truncate(0);
    await handle.write(tail.subarray(0, bytesRead), 0, bytesRead, 0);
  } finally {
    await handle.close();
  }
  logger.warn(
    `vm ${vmId}: console log cut from ${size} bytes to its last ${MAX_CONSOLE_BYTES} bytes`,
  );
}
