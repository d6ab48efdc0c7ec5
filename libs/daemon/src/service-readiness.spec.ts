import { Logger } from '@nestjs/common';
import { CommandRunner, notifyServiceReady } from './service-readiness';

describe('notifyServiceReady', () => {
  let warn: jest.SpyInstance;
  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(() => warn.mockRestore());

  it('does nothing when systemd gave no NOTIFY_SOCKET (not a Type=notify unit)', async () => {
    const run = jest.fn<ReturnType<CommandRunner>, Parameters<CommandRunner>>();
    await notifyServiceReady('Test', 'listening', { PATH: '/usr/bin' }, run);
    expect(run).not.toHaveBeenCalled();
    expect(warn).not.toHaveBeenCalled();
  });

  it('runs systemd-notify --ready with the status and the socket, then forgets the socket', async () => {
    const env: NodeJS.ProcessEnv = { PATH: '/usr/bin', NOTIFY_SOCKET: '/run/systemd/notify' };
    const run = jest.fn<ReturnType<CommandRunner>, Parameters<CommandRunner>>(() =>
      Promise.resolve(),
    );
    await notifyServiceReady('Test', 'listening on 0.0.0.0:9203', env, run);
    expect(run).toHaveBeenCalledWith(
      'systemd-notify',
      ['--ready', '--status=listening on 0.0.0.0:9203'],
      { PATH: '/usr/bin', NOTIFY_SOCKET: '/run/systemd/notify' },
    );
    // What the daemon starts later (QEMU) does not inherit it.
    expect(env).toEqual({ PATH: '/usr/bin' });
    expect(warn).not.toHaveBeenCalled();
  });

  it('warns, naming the reason and the consequence, when systemd-notify fails', async () => {
    const env: NodeJS.ProcessEnv = { NOTIFY_SOCKET: '/run/systemd/notify' };
    const run: CommandRunner = () => Promise.reject(new Error('spawn systemd-notify ENOENT'));
    await notifyServiceReady('Test', 'listening', env, run);
    expect(warn).toHaveBeenCalledWith(
      expect.stringMatching(
        /could not tell systemd that it is ready \(systemd-notify: spawn systemd-notify ENOENT\).*TimeoutStartSec/,
      ),
    );
    expect(env).toEqual({});
  });
});
