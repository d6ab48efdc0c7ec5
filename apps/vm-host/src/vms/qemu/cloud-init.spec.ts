import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  cloudInitMetaData,
  cloudInitUserData,
  guestHostname,
  makeSeedIso,
  plainSeedFiles,
} from './cloud-init';

describe('guestHostname', () => {
  it('is the type and the last 8 characters of the vm_id: unique among VMs of one type', () => {
    expect(guestHostname('vm-0123456789abcdef', 'web')).toBe('web-89abcdef');
    expect(guestHostname('vm-fedcba9876543210', 'web')).toBe('web-76543210');
  });

  it('fits a 63-character label and starts with no hyphen, whatever the type', () => {
    const long = guestHostname('vm-0123456789abcdef', 'a'.repeat(63));
    expect(long).toBe(`${'a'.repeat(54)}-89abcdef`);
    expect(long).toHaveLength(63);
    expect(guestHostname('vm-0123456789abcdef', '--db')).toBe('db-89abcdef');
    expect(guestHostname('vm-0123456789abcdef', '---')).toBe('vm-89abcdef');
  });
});

describe('cloudInitUserData', () => {
  it('sets the hostname and, when given, the SSH key, as data that cannot break out of its field', () => {
    const text = cloudInitUserData('web-1', 'ssh-ed25519 AAAAC3Nz operator@example');
    expect(text.startsWith('#cloud-config\n')).toBe(true);
    expect(JSON.parse(text.slice('#cloud-config\n'.length))).toEqual({
      hostname: 'web-1',
      preserve_hostname: false,
      ssh_authorized_keys: ['ssh-ed25519 AAAAC3Nz operator@example'],
    });
    expect(JSON.parse(cloudInitUserData('web-1').slice(14))).not.toHaveProperty(
      'ssh_authorized_keys',
    );
  });
});

describe('cloudInitMetaData', () => {
  it('names the instance by its vm_id and the host by the hostname given', () => {
    expect(cloudInitMetaData('vm-0123456789abcdef', 'web-89abcdef')).toBe(
      'instance-id: "vm-0123456789abcdef"\nlocal-hostname: "web-89abcdef"\n',
    );
  });

  it('quotes both values, so that neither can add a key or break the YAML', () => {
    const text = cloudInitMetaData('vm-1', 'web: x\npublic-keys: [evil]');
    expect(text.split('\n')).toEqual([
      'instance-id: "vm-1"',
      'local-hostname: "web: x\\npublic-keys: [evil]"',
      '',
    ]);
    // JSON strings are YAML's double-quoted scalars: each line's value reads back as given.
    expect(JSON.parse(text.split('\n')[1].slice('local-hostname: '.length))).toBe(
      'web: x\npublic-keys: [evil]',
    );
  });
});

describe('plainSeedFiles', () => {
  it('holds the hostname and the key, one a line, for an image without cloud-init', () => {
    expect(plainSeedFiles('web-1', 'ssh-ed25519 AAAAC3Nz operator@example')).toEqual({
      hostname: 'web-1\n',
      authorized_keys: 'ssh-ed25519 AAAAC3Nz operator@example\n',
    });
    expect(plainSeedFiles('web-1')).toEqual({ hostname: 'web-1\n', authorized_keys: '' });
  });
});

describe('makeSeedIso', () => {
  let root: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'cloud-init-'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('makes a private cidata ISO with meta-data, user-data and the plain files, nothing else left', async () => {
    const workDir = join(root, 'run', 'vm-0123456789abcdef');
    await mkdir(join(workDir, 'cidata', 'vm-fleet'), { recursive: true });
    await writeFile(join(workDir, 'cidata', 'left-over'), 'from an interrupted run');
    const iso = join(workDir, 'seed.iso');
    await makeSeedIso({
      vmId: 'vm-0123456789abcdef',
      vmType: 'web',
      sshPubkey: 'ssh-ed25519 AAAAC3Nz operator@example',
      workDir,
      iso,
    });
    expect(await readdir(workDir)).toEqual(['seed.iso']);
    expect(((await stat(iso)).mode & 0o777).toString(8)).toBe('600');
    // An ISO 9660 volume: its descriptor at 32 KiB names the volume.
    const volumeId = (await readFile(iso)).subarray(32_808, 32_840).toString('latin1');
    expect(volumeId.trim()).toBe('cidata');
    // Stored uncompressed: the guest's hostname is in it as written.
    const text = (await readFile(iso)).toString('latin1');
    expect(text).toContain('local-hostname: "web-89abcdef"\n');
    // Rock Ridge names: the folder and files the image's first-boot script reads.
    for (const name of ['user-data', 'meta-data', 'vm-fleet', 'hostname', 'authorized_keys']) {
      expect(text).toContain(name);
    }
    expect(text).not.toContain('left-over');
    // Each file starts a sector, after the previous one's zero padding; user-data quotes both.
    expect(text).toContain('\0web-89abcdef\n');
    expect(text).toContain('\0ssh-ed25519 AAAAC3Nz operator@example\n');
  });
});
