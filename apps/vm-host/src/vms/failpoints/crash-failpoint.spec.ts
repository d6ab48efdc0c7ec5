import { Logger } from '@nestjs/common';
import { vmHostConfig } from '../../../../../test/support/configs';
import { CrashFailpoint } from './crash-failpoint';

describe('CrashFailpoint', () => {
  let warnings: string[];

  beforeEach(() => {
    warnings = [];
    jest
      .spyOn(Logger.prototype, 'warn')
      .mockImplementation((message: unknown) => void warnings.push(String(message)));
  });

  afterEach(() => jest.restoreAllMocks());

  it('warns once at start-up when VM_HOST_FAILPOINT is set, so it cannot go unnoticed', () => {
    new CrashFailpoint(vmHostConfig({ VM_NODE_ID: 'node-a', VM_HOST_FAILPOINT: 'after-disk' }));
    expect(warnings).toEqual([
      'node node-a: test-only crash hook VM_HOST_FAILPOINT=after-disk is set: the agent will kill itself at that step',
    ]);
  });

  it('says nothing when it is unset', () => {
    new CrashFailpoint(vmHostConfig({ VM_NODE_ID: 'node-a' }));
    expect(warnings).toEqual([]);
  });
});
