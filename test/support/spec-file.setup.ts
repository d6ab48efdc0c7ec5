import { closeBrowsers } from './browser';
import { stopAllDaemons } from './daemons';
import { stopAllEtcdClusters } from './etcd-cluster';
import { stopAllEtcdServers } from './etcd-server';
import { stopAllRedisServers } from './redis-server';
import { removeScratchFolders } from './scratch-folders';

/**
 * jest setupFilesAfterEnv of the e2e and system tiers.
 *
 * Tests wait for real servers on a machine that may be busy: a generous default time limit, so
 * a slow moment is not a failure (a spec that needs longer sets its own).
 */
jest.setTimeout(20_000);

/**
 * After each spec file, whatever its
 * tests started is stopped and whatever they made is removed, also when one failed. Runs after
 * the afterAll hooks of the file's describe blocks (before its top-level ones), so a spec still
 * cleans up in its own order first.
 */
afterAll(async () => {
  await closeBrowsers();
  await stopAllDaemons();
  await stopAllRedisServers();
  await stopAllEtcdServers();
  await stopAllEtcdClusters();
  removeScratchFolders();
});
