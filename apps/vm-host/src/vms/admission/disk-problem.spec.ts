import { diskProblemOf } from './disk-problem';
import { VmCreateError } from '../vms.errors';

describe('diskProblemOf', () => {
  it('reads the code of a Node file system error, also as the cause of a create step', () => {
    const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), {
      code: 'ENOSPC',
    });
    expect(diskProblemOf(enospc)).toBe('ENOSPC');
    expect(diskProblemOf(new VmCreateError('seed ISO', 'failed', { cause: enospc }))).toBe(
      'ENOSPC',
    );
    expect(diskProblemOf(Object.assign(new Error('x'), { code: 'EACCES' }))).toBe('EACCES');
    expect(diskProblemOf(Object.assign(new Error('x'), { code: 'EROFS' }))).toBe('EROFS');
  });

  it('reads what qemu-img and genisoimage print', () => {
    expect(
      diskProblemOf(
        new Error(
          "qemu-img failed: qemu-img: /srv/vms/disks/vm-1.qcow2: Could not create '/srv/vms/disks/vm-1.qcow2': No space left on device",
        ),
      ),
    ).toBe('ENOSPC');
    expect(
      diskProblemOf(
        new Error('genisoimage failed: Unable to open disc image file: Permission denied'),
      ),
    ).toBe('EACCES');
  });

  it('is undefined for any other failure', () => {
    expect(
      diskProblemOf(new Error('qemu-img failed: Image is not in qcow2 format')),
    ).toBeUndefined();
    expect(diskProblemOf(Object.assign(new Error('x'), { code: 'ENOENT' }))).toBeUndefined();
    expect(diskProblemOf('No space left on device')).toBeUndefined();
  });
});
