import { Injectable } from '@nestjs/common';
import { VmHostConfig } from '../../config/vm-host.config';
import { Throttle } from './peer-transport';

/**
 * The node's one copy throttle (VM_COPY_MAX_MBPS): the copies it sends, the copies it serves
 * to a restore elsewhere and the copies it pulls for one share it, so together they never go
 * faster and never starve its guests.
 */
@Injectable()
export class CopyThrottle extends Throttle {
  constructor(config: VmHostConfig) {
    super(config.copyMaxMbps * 1_000_000);
  }
}
