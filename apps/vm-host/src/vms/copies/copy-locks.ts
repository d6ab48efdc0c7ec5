import { Injectable } from '@nestjs/common';
import { KeyedMutex } from '../life-cycle/keyed-mutex';

/**
 * One copy of a VM at a time, backups and copies to peers alike: QEMU's copy socket takes one
 * client, and a VM's disk runs one copy job. Taken before the VM's life-cycle lock, never after.
 */
@Injectable()
export class CopyLocks extends KeyedMutex {}
