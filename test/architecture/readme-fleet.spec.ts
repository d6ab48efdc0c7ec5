import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { declaredVariables, variableNames } from '@app/daemon';
import { FleetConfig } from '../../apps/fleet/src/config/fleet.config';
import { VmHostConfig } from '../../apps/vm-host/src/config/vm-host.config';
import { ConnectionConfig } from '../../apps/ppn-fleet/src/api/connection.config';
import { NodeSecretConfig } from '../../apps/ppn-fleet/src/node-token/node-token.command';

const ROOT = join(__dirname, '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/**
 * The bash blocks of README's "A fleet of three machines": the controller's, a node's, a VM's,
 * and the office's first web page.
 */
function fleetBlocks(): { controller: string; node: string; vm: string; web: string } {
  const readme = read('README.md');
  const start = readme.indexOf('\n## A fleet of three machines\n');
  expect(start).toBeGreaterThan(0);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map(([, block]) => block);
  expect(blocks).toHaveLength(4);
  const [controller, node, vm, web] = blocks;
  return { controller, node, vm, web };
}

/** `NAME=` set in a block: in a heredoc (the env file, a drop-in's Environment=) or a shell line. */
function assigned(block: string): string[] {
  return [...block.matchAll(/(?:^|[\s=(])(VM_[A-Z0-9_]+)=/gm)].map(([, name]) => name);
}

describe("README's fleet of three machines", () => {
  const { controller, node, vm, web } = fleetBlocks();

  it('gives the controller the node secret and the API token, and no shared node token', () => {
    expect(assigned(controller)).toEqual(
      expect.arrayContaining(['VM_FLEET_NODE_SECRET_FILE', 'VM_FLEET_API_TOKEN_FILE']),
    );
    // Both would be the move from a shared token, which still takes it from any node.
    expect(controller).not.toMatch(/VM_FLEET_NODE_TOKEN/);
    // The credential lines are the ones the units ship commented out.
    const unit = read('deploy/systemd/service-vm-fleet.service');
    for (const line of controller
      .split('\n')
      .filter((l) => /^(LoadCredential|Environment)=/.test(l))) {
      expect({ line, inUnit: unit.includes(`#${line}\n`) }).toEqual({ line, inUnit: true });
    }
  });

  it("enrolls a node with the agent's required variables, its own token from /etc/ppn, made first", () => {
    const required = declaredVariables(VmHostConfig)
      .filter((variable) => variable.required)
      .map(({ name }) => name);
    expect(assigned(node)).toEqual(expect.arrayContaining(required));
    expect(node.indexOf('install -d -m 700 /etc/ppn')).toBeGreaterThanOrEqual(0);
    expect(node.indexOf('install -d -m 700 /etc/ppn')).toBeLessThan(
      node.indexOf('/etc/ppn/node-token'),
    );
    const unit = read('deploy/systemd/service-vm-host.service');
    for (const line of node.split('\n').filter((l) => /^(LoadCredential|Environment)=/.test(l))) {
      expect({ line, inUnit: unit.includes(`#${line}\n`) }).toEqual({ line, inUnit: true });
    }
  });

  it('sets only variables the programs declare', () => {
    const declared = new Set([
      ...variableNames(FleetConfig),
      ...variableNames(VmHostConfig),
      ...variableNames(ConnectionConfig),
      ...variableNames(NodeSecretConfig),
    ]);
    for (const name of [
      ...assigned(controller),
      ...assigned(node),
      ...assigned(vm),
      ...assigned(web),
    ]) {
      expect({ name, declared: declared.has(name) }).toEqual({ name, declared: true });
    }
  });

  it('installs without recommended packages, the packages npm run package makes', () => {
    const installs = [controller, node].flatMap((block) =>
      block.split('\n').filter((line) => /apt(-get)? install/.test(line)),
    );
    expect(installs.length).toBeGreaterThanOrEqual(3);
    for (const line of installs) expect(line).toContain('--no-install-recommends');
    expect(read('deploy/packaging/build-packages.ts')).toContain(
      '`${pkg.name}_${version}_all.deb`',
    );
    expect(controller).toContain('./dist/packages/service-vm-fleet_*_all.deb');
    expect(controller).toContain('dist/packages/service-vm-host_*_all.deb');
    // The guest image from the builder the controller's package installs (its Recommends left
    // out, the builder's tools are in the block's first apt line).
    expect(controller).toMatch(/^ppn-fleet image build\b/m);
    const firstInstall = controller.split('\n').find((line) => /apt(-get)? install/.test(line));
    for (const tool of ['mmdebstrap', 'extlinux', 'syslinux-common', 'fdisk', 'qemu-utils']) {
      expect(firstInstall).toContain(tool);
    }
  });

  it('runs the controller and node blocks whole in a subshell that stops at the first failure', () => {
    for (const block of [controller, node]) {
      const lines = block.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^\( set -eu\b/);
      expect(lines[lines.length - 1]).toBe(')');
      // `set -e` ignores a failure left of `&&` (a failed `npm ci && npm run package` went on to
      // send empty tokens): one command a line.
      expect(lines.filter((line) => line.includes('&&'))).toEqual([]);
    }
  });

  it('ends with a web page: the image built once with a web server, a VM publishing port 80, its page fetched', () => {
    // Built once in block 1, with the options the CLI and the builder really take.
    expect(controller).toMatch(/^ppn-fleet image build --include nginx-light\b/m);
    expect(read('apps/ppn-fleet/src/images/image.command.ts')).toContain("'--include <packages>'");
    expect(read('deploy/images/build-debian-image.sh')).toContain('--include) extra=');
    const create = web.split('\n').find((line) => line.startsWith('ppn-fleet vm create'));
    expect(create).toMatch(/ --port 80\/tcp /);
    expect(create).toMatch(/ --wait-port 80\b/);
    const command = read('apps/ppn-fleet/src/vms/vm-create.command.ts');
    expect(command).toContain("flags: '--port <");
    expect(command).toContain("flags: '--wait-port <guest_port>'");
    // The page goes where Debian's nginx serves it from, as the user the image gives sudo.
    expect(web).toMatch(/sudo tee \/var\/www\/html\/index\.html/);
    expect(read('deploy/images/build-debian-image.sh')).toContain(
      "'debian ALL=(ALL) NOPASSWD:ALL'",
    );
    expect(web).toMatch(/^curl -s http:\/\/<wg_ip>:<web_port>\/ /m);
  });
});
