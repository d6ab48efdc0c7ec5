import {
  GIB,
  diskHasRoomAgain,
  diskRefusal,
  diskReserveBytes,
  diskRoom,
  gibText,
} from './disk-capacity';

describe('diskReserveBytes', () => {
  it('keeps 5% of a small file system and at most 2 GiB of a large one', () => {
    expect(diskReserveBytes(10 * GIB)).toBe(GIB / 2);
    expect(diskReserveBytes(1000 * GIB)).toBe(2 * GIB);
  });
});

describe('diskRoom', () => {
  it('counts every disk at its virtual size against what is free plus what the disks hold', () => {
    const room = diskRoom(
      { totalBytes: 100 * GIB, availableBytes: 50 * GIB },
      [
        { virtualBytes: 20 * GIB, allocatedBytes: 5 * GIB },
        { virtualBytes: 10 * GIB, allocatedBytes: 1 * GIB },
      ],
      1,
    );
    // 50 free + 6 held - 2 reserve = 54 room; 30 committed.
    expect(room).toEqual({
      roomBytes: 54 * GIB,
      reserveBytes: 2 * GIB,
      overcommit: 1,
      committedBytes: 30 * GIB,
      committableBytes: 24 * GIB,
    });
  });

  it('lets virtual sizes reach the room times VM_DISK_OVERCOMMIT (thin provisioning)', () => {
    const room = diskRoom({ totalBytes: 100 * GIB, availableBytes: 12 * GIB }, [], 3);
    expect(room.committableBytes).toBe(30 * GIB);
  });
});

describe('diskRefusal', () => {
  const space = { totalBytes: 20 * GIB, availableBytes: 10 * GIB };

  it('admits a disk that fits beside the others', () => {
    expect(diskRefusal({ virtualBytes: 4 * GIB, allocatedBytes: 0 }, space, [], 1)).toBeUndefined();
  });

  it('refuses one that would over-commit the room, naming disk_gb and the numbers', () => {
    const others = [{ virtualBytes: 4 * GIB, allocatedBytes: GIB }];
    expect(diskRefusal({ virtualBytes: 8 * GIB, allocatedBytes: 0 }, space, others, 1)).toBe(
      "disk_gb: 8.0 GiB does not fit in this node's disk room: 6.0 GiB committable of 10.0 GiB room in VM_DISK_DIR (reserve 1.0 GiB, 4.0 GiB committed to 1 other VM disk(s))",
    );
  });

  it('counts what an existing disk holds as its own room when it starts again', () => {
    const full = { totalBytes: 20 * GIB, availableBytes: GIB };
    const own = { virtualBytes: 4 * GIB, allocatedBytes: 4 * GIB };
    expect(diskRefusal(own, full, [], 1)).toBeUndefined();
  });

  it('names VM_DISK_OVERCOMMIT when it is set', () => {
    expect(diskRefusal({ virtualBytes: 100 * GIB, allocatedBytes: 0 }, space, [], 2.5)).toContain(
      'x VM_DISK_OVERCOMMIT 2.5',
    );
  });
});

describe('gibText', () => {
  it('prints GiB with one decimal, rounded down, and MiB below 1 GiB', () => {
    expect(gibText(4 * GIB)).toBe('4.0 GiB');
    expect(gibText(12.49 * GIB)).toBe('12.4 GiB');
    expect(gibText(64 * 1024 * 1024)).toBe('64 MiB');
    expect(gibText(0)).toBe('0 MiB');
  });
});

describe('diskHasRoomAgain', () => {
  it('is true only once more than the reserve is free', () => {
    expect(diskHasRoomAgain({ totalBytes: 20 * GIB, availableBytes: GIB })).toBe(false);
    expect(diskHasRoomAgain({ totalBytes: 20 * GIB, availableBytes: 2 * GIB })).toBe(true);
  });
});
