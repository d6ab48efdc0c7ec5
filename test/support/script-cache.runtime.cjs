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

const { Script, SourceTextModule } = require('node:vm');
const Runtime = require('jest-runtime').default;

/** V8 caches compileFunction's work from Node 22 on: jest's compile is kept there. */
const COMPILE_FUNCTION_UNCACHED = Number(process.versions.node.split('.')[0]) < 22;

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
    if (!COMPILE_FUNCTION_UNCACHED) return;
    if (!isModuleExecutor(executor)) {
      warnOnce(
        `${__filename}: jest-runtime ${require('jest-runtime/package.json').version} has no ModuleExecutor as jest 30's; jest compiles each module itself (the tiers run slower)\n`,
      );
      return;
    }
    const jestCompile = executor.compile.bind(executor);
    executor.compile = (source, filename) =>
      compileAsScript(executor, source, filename) ?? jestCompile(source, filename);
  }
}

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
        importModuleDynamically: (specifier, _script, attributes) => {
          if (typeof SourceTextModule !== 'function') {
            // jest's words for an import() it cannot serve.
            throw new Error(
              'You need to run with a version of node that supports ES Modules in the VM API. See https://jestjs.io/docs/ecmascript-modules',
            );
          }
          return executor.dynamicImport(specifier, scriptFilename, context, attributes);
        },
      },
    );
    return script.runInContext(context);
  } catch {
    return undefined;
  }
}

module.exports = ScriptCacheRuntime;
