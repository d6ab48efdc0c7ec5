import { NodeStalenessJob } from './node-staleness.job';
import { NodesService } from './nodes.service';

describe('NodeStalenessJob', () => {
  it('sweeps once at start-up: nodes that went silent while no controller ran are kept or dropped at once', async () => {
    const swept: string[] = [];
    const nodes = {
      dropStaleNodes: () => Promise.resolve(void swept.push('drop')),
      endExpiredHolds: () => Promise.resolve(void swept.push('holds')),
    } as unknown as NodesService;
    new NodeStalenessJob(nodes).onApplicationBootstrap();
    await new Promise((resolve) => setImmediate(resolve));
    expect(swept).toEqual(['drop', 'holds']);
  });
});
