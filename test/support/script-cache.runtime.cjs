// @ts-check
// jest's `runtime` for every tier (package.json): jest-runtime, except that on Node 20 a module's
// code is compiled as a vm.Script instead of with vm.compileFunction.
//
// Why: jest loads each test file's modules afresh (class-validator, Nest, rxjs: 600 to 800 files
// a spec) and compiles each one again. V8 keeps compiled scripts per process, keyed by their
// source, so the second spec of a worker compiling the same file gets the first one's work; on
// Node 20 vm.compileFunction skips that cache (V8 gained it for functions in Node 22). On 2 cores
// the unit tier took 57-60 s instead of 74-77 s from an empty cache (docs/development.md).
//
// The function a module runs as is the same: its code inside the same parameters, in the test
// file's context, at the same lines and columns (the wrapper has a line of its own, taken off by
// lineOffset). Code that does not compile goes to jest's own compile, which reports it as jest
// does. Where jest-runtime's internals differ from what this expects, jest is left as it is.
'use strict';

const { Script, SyntheticModule } = require('node:vm');
const Runtime = require('jest-runtime').default;

/** V8 caches compileFunction's work from Node 22 on: jest's compile is kept there. */
const COMPILE_FUNCTION_UNCACHED = Number(process.versions.node.split('.')[0]) < 22;
/**
 * With --experimental-vm-modules Node gives each script its own import() and V8 no longer
 * shares its work: jest's compile is kept then too.
 */
const VM_MODULES = typeof SyntheticModule === 'function';

/**
 * The part of jest-runtime's ModuleExecutor (jest 30) this replaces and uses.
 * @typedef {{
 *   compile: (source: string, filename: string) => Function | null,
 *   environment: { getVmContext(): import('node:vm').Context | null },
 *   resolution: { isCoreModule(filename: string): boolean },
 *   injectedModuleParameters: string[],
 *   dynamicImport: (
 *     specifier: string,
 *     identifier: string,
 *     context: import('node:vm').Context,
 *     attributes: unknown,
 *   ) => Promise<import('node:vm').Module>,
 * }} ModuleExecutor
 */

class ScriptCacheRuntime extends Runtime {
  /** @param {ConstructorParameters<typeof Runtime>} args */
  constructor(...args) {
    super(...args);
    /** @type {Partial<ModuleExecutor> | undefined} */
    // @ts-expect-error jest-runtime's executor is private in its types
    const executor = this.executor;
    // V8 coverage maps a script's offsets as compileFunction's: the wrapper line would shift them.
    const [, , , , , coverage] = args;
    const v8Coverage = coverage.collectCoverage && coverage.coverageProvider === 'v8';
    if (!COMPILE_FUNCTION_UNCACHED || VM_MODULES || v8Coverage) return;
    if (!isModuleExecutor(executor)) {
      warnOnce(
        `${__filename}: jest-runtime ${require('jest-runtime/package.json').version} has no ModuleExecutor as jest 30's; jest compiles each module itself (the tiers run slower)\n`,
      );
      return;
    }
    const jestCompile = executor.compile.bind(executor);
    executor.compile = (source, filename) =>
      compileAsScript(executor, source, filename) ?? jestCompile(source, filename);
    // For test/architecture/unit-tier.spec.ts: the specs' modules are compiled here.
    const context = executor.environment.getVmContext();
    if (context) Object.defineProperty(context, SCRIPT_CACHE_MARK, { value: true });
  }
}

/** Set on each test file's global while its modules are compiled here. */
const SCRIPT_CACHE_MARK = Symbol.for('ppn.script-cache-runtime');

let warned = false;
/** @param {string} text */
function warnOnce(text) {
  if (warned) return;
  warned = true;
  process.stderr.write(text);
}

/**
 * @param {Partial<ModuleExecutor> | undefined} executor
 * @returns {executor is ModuleExecutor}
 */
function isModuleExecutor(executor) {
  return (
    typeof executor?.compile === 'function' &&
    typeof executor.environment?.getVmContext === 'function' &&
    typeof executor.resolution?.isCoreModule === 'function' &&
    Array.isArray(executor.injectedModuleParameters) &&
    typeof executor.dynamicImport === 'function'
  );
}

/**
 * The module's function, compiled in the test file's context; undefined when its code does not
 * compile (jest's own compile then reports it) or the context is gone (jest answers that too).
 * @param {ModuleExecutor} executor
 * @param {string} source
 * @param {string} filename
 * @returns {Function | undefined}
 */
function compileAsScript(executor, source, filename) {
  const context = executor.environment.getVmContext();
  if (context == null) return undefined;
  // As jest names them, so that a stack trace reads the same.
  const scriptFilename = executor.resolution.isCoreModule(filename)
    ? `jest-nodejs-core-${filename}`
    : filename;
  try {
    const script = new Script(
      `(function (${executor.injectedModuleParameters.join(', ')}) {\n${source}\n})`,
      {
        filename: scriptFilename,
        lineOffset: -1,
        // Never called: without --experimental-vm-modules (with it, jest compiles) Node refuses
        // an import() first, as it does under jest's compile.
        importModuleDynamically: (specifier, _script, attributes) =>
          executor.dynamicImport(specifier, scriptFilename, context, attributes),
      },
    );
    const compiled = script.runInContext(context);
    // Code closing the wrapper early is no module: jest's compile refuses it.
    return typeof compiled === 'function' ? compiled : undefined;
  } catch {
    return undefined;
  }
}

module.exports = ScriptCacheRuntime;
