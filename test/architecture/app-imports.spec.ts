import {
  LIBRARY_LAYERS,
  findImportCircles,
  findLibraryLayerImports,
  findLongFiles,
  findUpwardImports,
} from './app-imports';
import { allSources, appSources, libSources, readSources } from './check-app-imports';

const FLEET = 'apps/fleet/src';
const VM_HOST = 'apps/vm-host/src';

/** The real files of the app at `appSrc`, with `line` added at the top of `file`. */
function sourcesWith(appSrc: string, file: string, line: string): Map<string, string> {
  const files = readSources(appSrc);
  const text = files.get(file);
  if (text === undefined) throw new Error(`${file} is not in ${appSrc}`);
  files.set(file, `${line}\n${text}`);
  return files;
}

function fleetWith(file: string, line: string): Map<string, string> {
  return sourcesWith(FLEET, file, line);
}

function planted(app: string, files: Record<string, string>): Map<string, string> {
  return new Map(Object.entries(files).map(([file, text]) => [`${app}/${file}`, text]));
}

describe('findUpwardImports', () => {
  it.each(appSources())('finds no import running back up in %s', (appSrc) => {
    expect(findUpwardImports(appSrc, readSources(appSrc))).toEqual([]);
  });

  it('checks every app, the controller and the agent', () => {
    expect(appSources()).toEqual(expect.arrayContaining([FLEET, VM_HOST]));
  });

  it.each([
    ["import { FLEET_ERROR_STATUSES } from '../fleet-error.statuses';", 'fleet-error.statuses.ts'],
    ["import { FleetAppModule } from '../fleet-app.module';", 'fleet-app.module.ts'],
    ["import { createFleetApp } from '../bootstrap';", 'bootstrap.ts'],
    [
      "import type { FleetAppModule } from 'apps/fleet/src/fleet-app.module';",
      'fleet-app.module.ts',
    ],
  ])('refuses a feature importing a root file: %s', (line, rootFile) => {
    const found = findUpwardImports(FLEET, fleetWith(`${FLEET}/nodes/nodes.service.ts`, line));
    expect(found).toEqual([
      {
        file: `${FLEET}/nodes/nodes.service.ts`,
        specifier: expect.stringContaining(rootFile.replace(/\.ts$/, '')),
        reason: expect.stringContaining(`nodes/ imports the app's root file ${rootFile}`),
      },
    ]);
  });

  it.each([
    [
      "import { VM_HOST_ERROR_STATUSES } from '../vm-host-error.statuses';",
      'vm-host-error.statuses.ts',
    ],
    ["import { VmHostAppModule } from '../vm-host-app.module';", 'vm-host-app.module.ts'],
  ])('refuses an agent feature importing a root file: %s', (line, rootFile) => {
    const file = `${VM_HOST}/vms/vms.module.ts`;
    expect(findUpwardImports(VM_HOST, sourcesWith(VM_HOST, file, line))).toEqual([
      {
        file,
        specifier: expect.stringContaining(rootFile.replace(/\.ts$/, '')),
        reason: expect.stringContaining(`vms/ imports the app's root file ${rootFile}`),
      },
    ]);
  });

  it('refuses two features importing each other (metrics back into nodes)', () => {
    const found = findUpwardImports(
      FLEET,
      fleetWith(
        `${FLEET}/metrics/metrics.module.ts`,
        "import { NodesRepository } from '../nodes/nodes.repository';",
      ),
    );
    expect(found.map(({ file }) => file)).toContain(`${FLEET}/metrics/metrics.module.ts`);
    expect(found.map(({ reason }) => reason)).toContain(
      'metrics/ imports nodes/ while nodes/ imports metrics/: two features never import each other',
    );
  });

  it('refuses a loop round three features, naming every import in it', () => {
    const files = planted('apps/vm-host/src', {
      'a/a.service.ts': "import { B } from '../b/b.service';",
      'b/b.service.ts': "import type { C } from '../c/c.service';",
      'c/c.service.ts': "export { A } from '../a/a.service';",
    });
    expect(findUpwardImports('apps/vm-host/src', files)).toEqual([
      {
        file: 'apps/vm-host/src/a/a.service.ts',
        specifier: '../b/b.service',
        reason:
          'a/ imports b/ while b/ imports c/ imports a/: two features never import each other',
      },
      {
        file: 'apps/vm-host/src/b/b.service.ts',
        specifier: '../c/c.service',
        reason:
          'b/ imports c/ while c/ imports a/ imports b/: two features never import each other',
      },
      {
        file: 'apps/vm-host/src/c/c.service.ts',
        specifier: '../a/a.service',
        reason:
          'c/ imports a/ while a/ imports b/ imports c/: two features never import each other',
      },
    ]);
  });

  it('lets root files import features, features import each other one way, and specs be', () => {
    const files = planted('apps/vm-host/src', {
      'app.module.ts': "import { A } from './a/a.module';\nimport { B } from './b';",
      'a/a.module.ts': "import { B } from '../b';\nimport { inner } from './inner/inner';",
      'a/inner/inner.ts': "import { A } from '../a.module';",
      'b/index.ts': "import { Clock } from '@app/daemon';\nimport { x } from 'node:fs';",
      'b/b.spec.ts': "import { A } from '../a/a.module';\nimport { M } from '../app.module';",
    });
    expect(findUpwardImports('apps/vm-host/src', files)).toEqual([]);
  });
});

describe('findImportCircles', () => {
  it('finds no circle of imports between the files of the apps and libs', () => {
    expect(findImportCircles(allSources())).toEqual([]);
  });

  it('reads every app and every lib', () => {
    const folders = [...appSources(), ...libSources()];
    expect(folders).toEqual(
      expect.arrayContaining([
        FLEET,
        VM_HOST,
        'libs/api-basics/src',
        'libs/daemon/src',
        'libs/fleet-domain/src',
      ]),
    );
  });

  it('finds a circle inside one feature, naming its files in import order', () => {
    const files = allSources();
    const shapes = 'apps/ppn-fleet/src/api/answer-check.ts';
    files.set(shapes, `import type { FleetVm } from './fleet-api.client';\n${files.get(shapes)}`);
    expect(findImportCircles(files)).toEqual([
      { files: [shapes, 'apps/ppn-fleet/src/api/fleet-api.client.ts'] },
    ]);
  });

  it('finds a circle inside a lib and one between libs through @app/', () => {
    const files = allSources();
    const address = 'libs/api-basics/src/ip-address.ts';
    files.set(address, `import { excerpt } from '@app/daemon';\n${files.get(address)}`);
    const found = findImportCircles(files);
    expect(found).toHaveLength(1);
    expect(found[0].files).toEqual(
      expect.arrayContaining([address, 'libs/daemon/src/index.ts', 'libs/api-basics/src/index.ts']),
    );
  });

  it('lets specs import what they test, and files import each other one way', () => {
    const found = findImportCircles(
      planted('libs/x/src', {
        'a.ts': "import { b } from './b';",
        'b.ts': "import { c } from './c';",
        'c.ts': '',
        'a.spec.ts': "import { a } from './a';",
        'c.spec.ts': "import { a } from './a';",
      }),
    );
    expect(found).toEqual([]);
  });
});

describe('findLongFiles', () => {
  const lines = (count: number): string => 'x\n'.repeat(count);

  it('names a hand-written file over 400 lines, with its count, and no spec nor generated client', () => {
    const files = new Map([
      ['apps/fleet/src/vms/long.service.ts', lines(401)],
      ['apps/fleet/src/vms/just-right.service.ts', lines(400)],
      ['apps/fleet/src/vms/long.service.spec.ts', lines(900)],
      ['apps/fleet/src/vms/vm-host-api.generated.ts', lines(900)],
    ]);
    expect(findLongFiles(files)).toEqual([
      { file: 'apps/fleet/src/vms/long.service.ts', lines: 401 },
    ]);
  });

  it('finds none in the apps and libs of this checkout', () => {
    expect(findLongFiles(allSources())).toEqual([]);
  });
});

describe('findLibraryLayerImports', () => {
  it('finds none in the libs of this checkout, specs included', () => {
    expect(findLibraryLayerImports(allSources())).toEqual([]);
  });

  it('places every lib of this checkout among the layers', () => {
    expect(
      libSources()
        .map((src) => src.split('/')[1])
        .sort(),
    ).toEqual(Object.keys(LIBRARY_LAYERS).sort());
  });

  it('names a lib that reaches across or up, by @app/ or by path, specs and types too', () => {
    const files = new Map([
      ['libs/daemon/src/a.ts', "import type { VmRecord } from '@app/fleet-domain';"],
      ['libs/daemon/src/a.spec.ts', "import { NodeHeartbeat } from '@app/fleet-domain';"],
      ['libs/fleet-domain/src/b.ts', "import { Clock } from '@app/daemon';"],
      ['libs/api-basics/src/c.ts', "import { ID_PATTERN } from '../../fleet-domain/src/ids';"],
      ['libs/api-basics/src/d.ts', "import { Clock } from '@app/daemon';"],
    ]);
    expect(findLibraryLayerImports(files)).toEqual([
      {
        file: 'libs/api-basics/src/c.ts',
        specifier: '../../fleet-domain/src/ids',
        reason:
          'the lib api-basics imports the lib fleet-domain: api-basics may import no other lib',
      },
      {
        file: 'libs/api-basics/src/d.ts',
        specifier: '@app/daemon',
        reason: 'the lib api-basics imports the lib daemon: api-basics may import no other lib',
      },
      {
        file: 'libs/daemon/src/a.spec.ts',
        specifier: '@app/fleet-domain',
        reason:
          'the lib daemon imports the lib fleet-domain: daemon may import only @app/api-basics',
      },
      {
        file: 'libs/daemon/src/a.ts',
        specifier: '@app/fleet-domain',
        reason:
          'the lib daemon imports the lib fleet-domain: daemon may import only @app/api-basics',
      },
      {
        file: 'libs/fleet-domain/src/b.ts',
        specifier: '@app/daemon',
        reason:
          'the lib fleet-domain imports the lib daemon: fleet-domain may import only @app/api-basics',
      },
    ]);
  });

  it('lets a lib import the libs below it and itself, and apps import any lib', () => {
    const files = new Map([
      [
        'libs/daemon/src/a.ts',
        "import { ErrorBody } from '@app/api-basics';\nimport { b } from './b';",
      ],
      ['libs/fleet-domain/src/b.ts', "import { ApiProperty } from '@app/api-basics';"],
      ['libs/api-basics/src/c.ts', "import { isUnicastAddress } from './ip-address';"],
      [
        'apps/fleet/src/main.ts',
        "import { Clock } from '@app/daemon';\nimport { ids } from '@app/fleet-domain';",
      ],
    ]);
    expect(findLibraryLayerImports(files)).toEqual([]);
  });

  it('names a lib not placed among the layers', () => {
    expect(findLibraryLayerImports(new Map([['libs/new-lib/src/index.ts', '']]))).toEqual([
      expect.objectContaining({ file: 'libs/new-lib/src/index.ts', specifier: '' }),
    ]);
  });
});
