#!/usr/bin/env node
// Builds a JavaScript policy plugin into a wasq component: the reference for what
// `wasq plugin build` runs for a plugin whose package.json says `"wasq": {"kind": …}`.
//
//   node plugins/sdk-js/tools/build.mjs PLUGIN_DIR [-o OUT.wasm] [--wit WIT_DIR]
//
//   PLUGIN_DIR  holds package.json (`"wasq": {"kind": "ordering" | "preemption" |
//               "flavor-assignment" | "placement" | "dispatch"}`, and optionally `"entry"`,
//               policy.js by default) and the entry module, which imports the SDK as
//               `../sdk-js/index.js` and exports the kind's interface object.
//   -o          the component to write (default: ./<package name>.wasm)
//   --wit       the `wasq:policy` WIT directory (default: the repository's `wit/`, two levels
//               above this SDK)
//   COMPONENTIZE_JS  the componentize-js executable (default: `componentize-js` on PATH)
//
// componentize-js loads modules only from below its working directory, and reads the WIT
// only from there too, so the build stages everything in a fresh temporary directory:
//
//   T/wit/            a copy of the WIT
//   T/sdk-js/         a copy of the SDK's runtime files (index.js, component.js, src/)
//   T/plugin/         a copy of PLUGIN_DIR (without node_modules, .git, *.wasm)
//   T/entry.js        import './sdk-js/component.js';
//                     export { <interface> } from './plugin/<entry>';
//
// and runs, in T:
//
//   componentize-js entry.js --wit wit --world-name <kind>-plugin \
//       -d stdio random clocks http fetch-event -o out.wasm
//
// Every WASI feature is disabled: the component imports only `wasq:policy/*`.

import { spawnSync } from 'node:child_process';
import { copyFile, cp, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The interface object policy.js exports, by kind (jco's camelCase of the WIT interface). */
export const INTERFACES = {
  ordering: 'ordering',
  preemption: 'preemption',
  'flavor-assignment': 'flavorAssignment',
  placement: 'placement',
  dispatch: 'dispatch',
};

/** What componentize-js must not link: every WASI feature it offers. */
export const DISABLED = ['stdio', 'random', 'clocks', 'http', 'fetch-event'];

const sdk = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Builds the plugin in `pluginDir` into `out`; returns the component's size and build time.
 * @param {{ pluginDir: string, out?: string, wit?: string, componentize?: string }} options
 */
export async function build({ pluginDir, out, wit, componentize }) {
  const dir = resolve(pluginDir);
  const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
  const kind = pkg?.wasq?.kind;
  const iface = INTERFACES[/** @type {keyof typeof INTERFACES} */ (kind)];
  if (!iface) throw new Error(`${dir}/package.json: "wasq": {"kind": …} must be one of ${Object.keys(INTERFACES).join(', ')}`);
  const entry = String(pkg.wasq.entry ?? 'policy.js').replace(/^\.\//, '');
  await stat(join(dir, entry));
  const target = resolve(out ?? `${pkg.name ?? basename(dir)}.wasm`);
  const witDir = resolve(wit ?? join(sdk, '..', '..', 'wit'));
  await stat(join(witDir, 'types.wit'));
  const tool = componentize ?? process.env.COMPONENTIZE_JS ?? 'componentize-js';

  const stage = await mkdtemp(join(tmpdir(), 'wasq-js-build-'));
  try {
    // The package's own files (and `deps/`, if any); older versions kept beside them are not.
    await cp(witDir, join(stage, 'wit'), {
      recursive: true,
      filter: (src) => src === witDir || src.endsWith('.wit') || src.startsWith(join(witDir, 'deps')),
    });
    await mkdir(join(stage, 'sdk-js'));
    for (const file of ['index.js', 'component.js', 'package.json']) await copyFile(join(sdk, file), join(stage, 'sdk-js', file));
    await cp(join(sdk, 'src'), join(stage, 'sdk-js', 'src'), { recursive: true });
    await cp(dir, join(stage, 'plugin'), {
      recursive: true,
      filter: (src) => !/(^|\/)(node_modules|\.git)(\/|$)/.test(src.slice(dir.length)) && !src.endsWith('.wasm'),
    });
    await writeFile(join(stage, 'entry.js'), `import './sdk-js/component.js';\nexport { ${iface} } from './plugin/${entry}';\n`);
    const started = Date.now();
    const run = spawnSync(tool, ['entry.js', '--wit', 'wit', '--world-name', `${kind}-plugin`, '-d', ...DISABLED, '-o', 'out.wasm'], {
      cwd: stage,
      encoding: 'utf8',
    });
    const millis = Date.now() - started;
    if (run.error) throw new Error(`cannot run ${tool}: ${run.error.message} (set COMPONENTIZE_JS)`);
    const built = await stat(join(stage, 'out.wasm')).catch(() => undefined);
    if (run.status !== 0 || !built) {
      throw new Error(`${tool} failed (exit ${run.status}):\n${run.stderr || run.stdout}`);
    }
    await cp(join(stage, 'out.wasm'), target);
    return { out: target, kind, bytes: built.size, millis };
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  /** @type {{ pluginDir?: string, out?: string, wit?: string }} */
  const options = {};
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-o' || args[i] === '--out') options.out = args[++i];
    else if (args[i] === '--wit') options.wit = args[++i];
    else if (!options.pluginDir) options.pluginDir = args[i];
    else throw new Error(`unexpected argument ${args[i]}`);
  }
  if (!options.pluginDir) {
    console.error('usage: node tools/build.mjs PLUGIN_DIR [-o OUT.wasm] [--wit WIT_DIR]');
    process.exit(2);
  }
  try {
    const r = await build(/** @type {{ pluginDir: string }} */ (options));
    console.log(`${r.out}: ${r.kind} plugin, ${(r.bytes / 1048576).toFixed(1)} MiB, built in ${(r.millis / 1000).toFixed(1)} s`);
  } catch (e) {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  }
}
