import { VmCopies, ageText, sizeText } from '@app/fleet-domain';
import { createCopiesFields, vmCopiesLive, vmCopiesSection } from './copies.views';

const HOSTILE = '<img src=x onerror=alert(1)>';
const ESCAPED = '&lt;img src=x onerror=alert(1)&gt;';
const NOW = Date.UTC(2026, 7, 6, 12, 0, 0);

function copies(overrides: Partial<VmCopies> = {}): VmCopies {
  return {
    vm_id: 'vm-1',
    node_id: 'n1',
    policy: { count: 1, every_s: 60 },
    copied_at: '2026-08-06T11:59:18.000Z',
    copy_node_id: 'n2',
    copies: [
      {
        vm_id: 'vm-1',
        node_id: 'n2',
        source_node_id: 'n1',
        copied_at: '2026-08-06T11:59:18.000Z',
        size_bytes: 3_355_443,
      },
    ],
    backups: {
      vm_id: 'vm-1',
      backups: [
        {
          backup_id: '20260806T110000Z-3f2a/0001',
          kind: 'incremental',
          taken_at: '2026-08-06T11:58:00.000Z',
          size_bytes: 1_048_576,
          path: '/mnt/usb/vm-backups/vm-1/20260806T110000Z-3f2a/0001-incremental.qcow2',
        },
      ],
      in_progress_since: null,
      last_error: null,
    },
    backups_unread: null,
    ...overrides,
  };
}

/** The text a reader sees, tags and runs of white space gone. */
function words(text: string): string {
  return text
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

describe('copies and backups on the VM page', () => {
  it('shows the policy, the freshest copy, each copy (node, age, size) and each backup', () => {
    const text = words(vmCopiesLive(copies(), NOW).text);
    expect(text).toContain('Copy policy 1 copy on other nodes, every 60 s');
    expect(text).toContain('Freshest copy on n2 , 2026-08-06T11:59:18.000Z (42 s ago)');
    expect(text).toContain('n2 2026-08-06T11:59:18.000Z (42 s ago) 3.2 MiB n1');
    expect(text).toContain(
      '20260806T110000Z-3f2a/0001 incremental 2026-08-06T11:58:00.000Z (2 min ago) 1.0 MiB /mnt/usb/vm-backups/vm-1/20260806T110000Z-3f2a/0001-incremental.qcow2',
    );
    expect(text).not.toContain('not its node now');
  });

  it('says what is missing: no policy, copies 0, no copy, no backup, backups unread, a failure', () => {
    const none = words(
      vmCopiesLive(copies({ policy: null, copies: [], copied_at: null, copy_node_id: null }), NOW)
        .text,
    );
    expect(none).toContain('Copy policy not reported by its agent');
    expect(none).toContain('Freshest copy none on another live node');
    expect(none).toContain('No copy on another node.');
    expect(words(vmCopiesLive(copies({ policy: { count: 0, every_s: 60 } }), NOW).text)).toContain(
      'none: this VM is not copied to another node',
    );
    const unread = words(
      vmCopiesLive(
        copies({ backups: null, backups_unread: 'the agent of node n1 could not be reached' }),
        NOW,
      ).text,
    );
    expect(unread).toContain('Backups not read: the agent of node n1 could not be reached.');
    const failing = words(
      vmCopiesLive(
        copies({
          backups: {
            vm_id: 'vm-1',
            backups: [],
            in_progress_since: '2026-08-06T11:59:30.000Z',
            last_error: 'disk full',
          },
        }),
        NOW,
      ).text,
    );
    expect(failing).toContain("No backup in node n1's VM_BACKUP_DIR.");
    expect(failing).toContain('A backup is under way since 2026-08-06T11:59:30.000Z (30 s ago).');
    expect(failing).toContain('The last backup failed: disk full');
  });

  it('escapes every string a node or agent sent, and marks a copy sent by another node', () => {
    const page = vmCopiesSection(
      `vm-${HOSTILE}`,
      copies({
        node_id: HOSTILE,
        copy_node_id: HOSTILE,
        copies: [
          {
            vm_id: 'vm-1',
            node_id: HOSTILE,
            source_node_id: HOSTILE,
            copied_at: HOSTILE,
            size_bytes: 1,
          },
        ],
        backups: null,
        backups_unread: HOSTILE,
      }),
      NOW,
    ).text;
    expect(page).not.toContain(HOSTILE);
    expect(page).toContain(ESCAPED);
    expect(page).toContain(
      `data-live="/console/fragments/vms/${encodeURIComponent(`vm-${HOSTILE}`)}/copies"`,
    );
    expect(page).toContain(`href="/nodes/${encodeURIComponent(HOSTILE)}"`);
    // Sent by HOSTILE, which is the VM's node here: the badge is only for another sender.
    expect(page).not.toContain('not its node now');
    expect(vmCopiesLive(copies({ node_id: 'n3' }), NOW).text).toContain('not its node now');
  });

  it('marks a VM the leader recovered with its generation, and says nothing of it otherwise', () => {
    expect(words(vmCopiesLive(copies({ generation: 2 }), NOW).text)).toContain(
      'Recovered generation 2 recovered from its copies on another node 2 times after its node was lost',
    );
    expect(words(vmCopiesLive(copies({ generation: 1 }), NOW).text)).toContain(
      'another node once after its node was lost',
    );
    expect(vmCopiesLive(copies(), NOW).text).not.toContain('Recovered');
  });

  it('reads the section at the first refresh when the page had none', () => {
    expect(words(vmCopiesSection('vm-1', undefined, NOW).text)).toBe('Copies and backups Reading…');
  });

  it('ages and sizes as an operator reads them', () => {
    expect(ageText('2026-08-06T11:00:00Z', NOW)).toBe('60 min');
    expect(ageText('2026-08-04T12:00:00+00:00', NOW)).toBe('2 d');
    expect(ageText('soon', NOW)).toBe('?');
    expect(sizeText(512)).toBe('512 B');
    expect(sizeText(1_503_238_553)).toBe('1.4 GiB');
  });

  it('adds the copy fields to the create form with the wire limits, the fleet default first', () => {
    const form = createCopiesFields().text;
    expect(form).toContain('<option value="">fleet default</option>');
    expect(form).toMatch(/<option value="2">2<\/option>/);
    expect(form).not.toContain('value="3"');
    expect(form).toContain('min="30"');
    expect(form).toContain('max="86400"');
    expect(form).toContain('data-type="integer"');
  });
});
