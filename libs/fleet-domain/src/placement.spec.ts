import { heartbeat } from '../../../test/support/heartbeats';
import { holdRam } from './node-changes';
import { nodeStateFromHeartbeat } from './node-heartbeats';
import { PlacementCandidate, placeVm, placementCandidate } from './placement';

function node(node_id: string, ram_available_mb: number, extra: Partial<PlacementCandidate> = {}) {
  return { node_id, ram_available_mb, kvm_available: false, reserved: false, ...extra };
}

const plain = { prefer_kvm: false };

describe('placeVm', () => {
  describe('safety margin of 512 MB', () => {
    it('fits 512 MB on a node with exactly 1024 MB free', () => {
      expect(placeVm({ ...plain, ram_mb: 512 }, [node('a', 1024)])).toEqual({
        kind: 'placed',
        node_id: 'a',
        required_free_mb: 1024,
        passed_over: [],
      });
    });

    it('does not fit 513 MB on a node with 1024 MB free', () => {
      const placement = placeVm({ ...plain, ram_mb: 513 }, [node('a', 1024)]);
      expect(placement.kind).toBe('no-capacity');
      expect(placement.kind === 'no-capacity' && placement.message).toContain('1025 MB');
    });
  });

  it('picks the node with the most free RAM', () => {
    const nodes = [node('small', 2048), node('big', 8192), node('mid', 4096)];
    expect(placeVm({ ...plain, ram_mb: 256 }, nodes)).toMatchObject({ node_id: 'big' });
  });

  it('breaks ties by the smallest node id, whatever the listing order', () => {
    const nodes = [node('n-c', 4096), node('n-a', 4096), node('n-b', 4096)];
    expect(placeVm({ ...plain, ram_mb: 256 }, nodes)).toMatchObject({ node_id: 'n-a' });
    expect(placeVm({ ...plain, ram_mb: 256 }, [...nodes].reverse())).toMatchObject({
      node_id: 'n-a',
    });
  });

  describe('prefer_kvm', () => {
    it('lets a KVM node with enough RAM win over a non-KVM node with more', () => {
      const nodes = [node('tcg', 16384), node('kvm', 2048, { kvm_available: true })];
      expect(placeVm({ ram_mb: 1024, prefer_kvm: true }, nodes)).toMatchObject({
        node_id: 'kvm',
      });
    });

    it('falls back to a non-KVM node when no KVM node has room', () => {
      const nodes = [node('tcg', 16384), node('kvm', 1024, { kvm_available: true })];
      expect(placeVm({ ram_mb: 1024, prefer_kvm: true }, nodes)).toMatchObject({
        node_id: 'tcg',
      });
    });

    it('is ignored when false: most free RAM wins', () => {
      const nodes = [node('tcg', 16384), node('kvm', 2048, { kvm_available: true })];
      expect(placeVm({ ram_mb: 1024, prefer_kvm: false }, nodes)).toMatchObject({
        node_id: 'tcg',
      });
    });

    it('picks the KVM node with the most RAM among KVM nodes', () => {
      const nodes = [
        node('kvm-small', 4096, { kvm_available: true }),
        node('kvm-big', 8192, { kvm_available: true }),
        node('tcg', 65536),
      ];
      expect(placeVm({ ram_mb: 1024, prefer_kvm: true }, nodes)).toMatchObject({
        node_id: 'kvm-big',
      });
    });
  });

  describe('reserved nodes', () => {
    it('are skipped while a non-reserved node fits, even with far more RAM', () => {
      const nodes = [node('reserved', 65536, { reserved: true }), node('normal', 2048)];
      expect(placeVm({ ...plain, ram_mb: 1024 }, nodes)).toMatchObject({ node_id: 'normal' });
    });

    it('are used as a last resort when they are all there is', () => {
      const nodes = [node('reserved', 4096, { reserved: true })];
      expect(placeVm({ ...plain, ram_mb: 1024 }, nodes)).toMatchObject({ node_id: 'reserved' });
    });

    it('are used when every non-reserved node is short of RAM', () => {
      const nodes = [
        node('normal-1', 1500),
        node('normal-2', 1535),
        node('reserved-small', 2048, { reserved: true }),
        node('reserved-big', 4096, { reserved: true }),
      ];
      expect(placeVm({ ...plain, ram_mb: 1024 }, nodes)).toMatchObject({
        node_id: 'reserved-big',
      });
    });

    it('a non-KVM non-reserved node beats a reserved KVM node even with prefer_kvm', () => {
      const nodes = [
        node('kvm-reserved', 8192, { kvm_available: true, reserved: true }),
        node('tcg', 2048),
      ];
      expect(placeVm({ ram_mb: 1024, prefer_kvm: true }, nodes)).toMatchObject({ node_id: 'tcg' });
    });
  });

  it('answers no-capacity for an empty fleet', () => {
    expect(placeVm({ ...plain, ram_mb: 64 }, []).kind).toBe('no-capacity');
  });

  describe('preferred_node', () => {
    it('places on the preferred node without the margin, even when another has more RAM', () => {
      const nodes = [node('big', 65536), node('wanted', 1024)];
      expect(placeVm({ ...plain, ram_mb: 1024, preferred_node: 'wanted' }, nodes)).toEqual({
        kind: 'placed',
        node_id: 'wanted',
        required_free_mb: 1024,
        passed_over: [],
      });
    });

    it('is honoured even when the node is reserved', () => {
      const nodes = [node('big', 65536), node('wanted', 4096, { reserved: true })];
      expect(placeVm({ ...plain, ram_mb: 1024, preferred_node: 'wanted' }, nodes)).toMatchObject({
        node_id: 'wanted',
      });
    });

    it('refuses, naming the node, when it is not listed; no other node is considered', () => {
      const placement = placeVm({ ...plain, ram_mb: 64, preferred_node: 'ghost' }, [
        node('big', 65536),
      ]);
      expect(placement.kind).toBe('preferred-node-unfit');
      expect(placement.kind !== 'placed' && placement.message).toContain('ghost');
    });

    it('refuses, naming the node, when it is short of RAM', () => {
      const placement = placeVm({ ...plain, ram_mb: 1025, preferred_node: 'wanted' }, [
        node('wanted', 1024),
        node('big', 65536),
      ]);
      expect(placement.kind).toBe('preferred-node-unfit');
      expect(placement.kind !== 'placed' && placement.message).toContain('wanted');
    });

    it('null means no preference', () => {
      expect(
        placeVm({ ...plain, ram_mb: 64, preferred_node: null }, [node('a', 2048)]),
      ).toMatchObject({ node_id: 'a' });
    });
  });

  describe('refusals explain themselves', () => {
    function refusal(placement: ReturnType<typeof placeVm>): string {
      if (placement.kind === 'placed') throw new Error(`placed on ${placement.node_id}`);
      return placement.message;
    }

    it('lists every node considered with what it needs and has, closest to fitting first', () => {
      const message = refusal(
        placeVm({ ...plain, ram_mb: 4096 }, [
          node('edge-01', 2000, { reserved: true }),
          node('compute-west-02', 3100),
          node('gpu-1', 4000, { kvm_available: true }),
        ]),
      );
      expect(message).toBe(
        'no node has 4608 MB free (ram_mb 4096 + 512 MB margin); 3 live node(s) considered: ' +
          'gpu-1: needs 4608 MB, has 4000 MB; compute-west-02: needs 4608 MB, has 3100 MB; ' +
          'edge-01: needs 4608 MB, has 2000 MB',
      );
    });

    it('says so when no node is live', () => {
      expect(refusal(placeVm({ ...plain, ram_mb: 64 }, []))).toBe(
        'no node has 576 MB free (ram_mb 64 + 512 MB margin); no node is live',
      );
    });

    it('names the first ten nodes of a large fleet and counts the rest', () => {
      const fleet = Array.from({ length: 250 }, (_, index) =>
        node(`n-${String(index).padStart(3, '0')}`, 1000 + index),
      );
      const message = refusal(placeVm({ ...plain, ram_mb: 4096 }, fleet));
      expect(message).toContain('250 live node(s) considered: n-249: needs 4608 MB, has 1249 MB;');
      expect(message).toContain('n-240: needs 4608 MB, has 1240 MB; and 240 more');
      expect(message).not.toContain('n-239');
      expect(message.length).toBeLessThan(700);
    });

    it('gives the reasons the other nodes lost to the chosen one', () => {
      const placement = placeVm({ ram_mb: 1024, prefer_kvm: true }, [
        node('edge-01', 65536, { reserved: true }),
        node('tcg-big', 32768),
        node('kvm', 4096, { kvm_available: true }),
        node('kvm-small', 2048, { kvm_available: true }),
        node('tiny', 1024),
      ]);
      expect(placement).toEqual({
        kind: 'placed',
        node_id: 'kvm',
        required_free_mb: 1536,
        passed_over: [
          'edge-01: reserved, used only when no other node fits',
          'tcg-big: no KVM',
          'kvm-small: has 2048 MB, kvm has 4096 MB',
          'tiny: needs 1536 MB, has 1024 MB',
        ],
      });
    });
  });

  describe('nodes that missed two heartbeats', () => {
    const late = { silent_ms: 20_001, beat_interval_ms: 10_000 };

    it('are passed over while a fresh node fits, even with far more RAM, and say why', () => {
      const placement = placeVm({ ...plain, ram_mb: 1024 }, [
        node('dying', 65536, late),
        node('fresh', 2048, { silent_ms: 9_000, beat_interval_ms: 10_000 }),
      ]);
      expect(placement).toMatchObject({
        node_id: 'fresh',
        passed_over: ['dying: missed 2 heartbeats (silent 20.0 s, beats every 10.0 s)'],
      });
    });

    it('are not chosen at all: a fleet of late nodes refuses, naming them', () => {
      const placement = placeVm({ ...plain, ram_mb: 1024 }, [node('dying', 65536, late)]);
      expect(placement).toEqual({
        kind: 'no-capacity',
        message:
          'no node has 1536 MB free (ram_mb 1024 + 512 MB margin); 1 live node(s) considered: ' +
          'dying: missed 2 heartbeats (silent 20.0 s, beats every 10.0 s)',
      });
    });

    it('counts only from two whole intervals of silence, and not before the interval is known', () => {
      expect(
        placeVm({ ...plain, ram_mb: 64 }, [
          node('a', 4096, { silent_ms: 20_000, beat_interval_ms: 10_000 }),
        ]),
      ).toMatchObject({ node_id: 'a' });
      expect(
        placeVm({ ...plain, ram_mb: 64 }, [
          node('a', 4096, { silent_ms: 29_000, beat_interval_ms: null }),
        ]),
      ).toMatchObject({ node_id: 'a' });
    });

    it('make an unfit preferred_node, with the reason', () => {
      const placement = placeVm({ ...plain, ram_mb: 64, preferred_node: 'dying' }, [
        node('dying', 65536, late),
      ]);
      expect(placement).toEqual({
        kind: 'preferred-node-unfit',
        message: 'preferred_node dying: missed 2 heartbeats (silent 20.0 s, beats every 10.0 s)',
      });
    });
  });

  describe('placementCandidate', () => {
    const beat = heartbeat({
      node_id: 'n1',
      ram_total_mb: 8192,
      ram_used_mb: 2048,
      kvm_available: true,
    });

    it('sees RAM held now, how long the node is silent, and how often it beats', () => {
      const first = nodeStateFromHeartbeat(beat, 0);
      const second = nodeStateFromHeartbeat(beat, 10_000, first);
      const held = holdRam(
        {
          holdId: 'h1',
          ramMb: 1024,
          requiredFreeMb: 0,
          nowMs: 10_000,
          expiresAtMs: 25_000,
          spawnKey: `${'0'.repeat(64)}.${'1'.repeat(64)}`,
        },
        0,
      )(second).next!;
      expect(placementCandidate(held, 24_000)).toEqual({
        node_id: 'n1',
        ram_available_mb: 5120,
        kvm_available: true,
        reserved: false,
        silent_ms: 14_000,
        beat_interval_ms: 10_000,
      });
      expect(placementCandidate(held, 25_000).ram_available_mb).toBe(6144);
    });
  });
});

describe('placeVm with published ports', () => {
  const held = (entries: Record<string, string>): Map<string, string> =>
    new Map(Object.entries(entries));
  const asks8080 = {
    ...plain,
    ram_mb: 256,
    ports: [{ protocol: 'tcp' as const, host_port: 8080 }],
  };

  it('passes over a node whose VMs hold the host_port, saying so, for one where it is free', () => {
    const nodes = [
      node('big', 8192, { held_ports: held({ '8080/tcp': 'vm-0000000000000001' }) }),
      node('small', 2048, { held_ports: held({ '8080/udp': 'vm-0000000000000002' }) }),
    ];
    expect(placeVm(asks8080, nodes)).toEqual({
      kind: 'placed',
      node_id: 'small',
      required_free_mb: 768,
      passed_over: ['big: host_port 8080/tcp is held by vm vm-0000000000000001'],
    });
  });

  it('refuses (ports-taken) naming the port on each node with room when all hold it', () => {
    const nodes = [
      node('a', 8192, { held_ports: held({ '8080/tcp': 'vm-0000000000000001' }) }),
      node('b', 100),
    ];
    const placement = placeVm(asks8080, nodes);
    expect(placement).toEqual({
      kind: 'ports-taken',
      message:
        'every node with room holds a host_port this create asks for: a: host_port 8080/tcp is held by vm vm-0000000000000001; ask for another host_port, or none (a free one is then chosen)',
    });
    expect(
      placeVm({ ...asks8080, preferred_node: 'a' }, nodes).kind === 'preferred-node-unfit',
    ).toBe(true);
  });

  it('takes a port without host_port anywhere, and reads held ports from the heartbeat', () => {
    const state = nodeStateFromHeartbeat(
      heartbeat({
        node_id: 'a',
        vms: [
          {
            vm_id: 'vm-0000000000000001',
            vm_type: 'web',
            state: 'Running' as never,
            ram_alloc_mb: 64,
            vcpu_count: 1,
            started_at: null,
            tenant_id: null,
            host_ports: [{ host_port: 8080, guest_port: 80, protocol: 'tcp' }],
          },
        ],
      }),
      0,
    );
    const candidate = placementCandidate(state, 0);
    expect(candidate.held_ports).toEqual(held({ '8080/tcp': 'vm-0000000000000001' }));
    expect(placeVm(asks8080, [candidate]).kind).toBe('ports-taken');
    expect(placeVm({ ...plain, ram_mb: 256, ports: [{ protocol: 'tcp' }] }, [candidate]).kind).toBe(
      'placed',
    );
  });
});
