import { DISK_PROBLEMS, DiskProblem } from '../vms.errors';

/** How tools (qemu-img, genisoimage) print the same errors on stderr. */
const TOOL_MESSAGES: ReadonlyArray<[RegExp, DiskProblem]> = [
  [/no space left on device/i, 'ENOSPC'],
  [/disk quota exceeded/i, 'EDQUOT'],
  [/permission denied/i, 'EACCES'],
  [/operation not permitted/i, 'EPERM'],
  [/read-only file system/i, 'EROFS'],
];

/**
 * Whether an error (or what caused it) means the file system would not take a file: a Node
 * error's code, or a tool's message saying so. Undefined for any other failure.
 */
export function diskProblemOf(error: unknown): DiskProblem | undefined {
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 5; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && code in DISK_PROBLEMS) return code as DiskProblem;
    const { message } = current;
    const byText = TOOL_MESSAGES.find(([pattern]) => pattern.test(message));
    if (byText) return byText[1];
    current = current.cause;
  }
  return undefined;
}
