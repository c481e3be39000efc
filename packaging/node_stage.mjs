// Stages the npm packages of a release the way napi-rs projects publish them: the main package
// `agentstream` (the compiled TypeScript wrapper and napi's loader, no addon) and one package per
// platform carrying the prebuilt addon (`agentstream-linux-x64-gnu`, made by `napi
// create-npm-dirs` from the `napi.targets` of node/package.json), listed in the main package's
// optionalDependencies: npm installs only the platform package whose os/cpu/libc match, and the
// loader (node/native/index.js) requires it by that name.
//
//   node packaging/node_stage.mjs STAGE_DIR PLATFORM=ADDON [PLATFORM=ADDON ...] [--supervisor PLATFORM=PROGRAM ...]
//
// e.g. `linux-x64-gnu=target/x86_64-unknown-linux-gnu/release/libagentstream_node.so`. Every
// platform of napi.targets needs its addon: a main package must not list a platform package
// that has no binary. A platform's `agentstream-supervisor` (the supervisor/ crate) goes beside
// its addon, executable: the core runs it as each run's supervisor instead of forking Node. Writes STAGE_DIR/agentstream and STAGE_DIR/npm/<platform>; `npm pack`
// in each gives the tarballs (mk/release.mk).

import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const [stageArg, ...rest] = process.argv.slice(2);
const addonArgs = [];
const supervisorArgs = [];
for (let i = 0; i < rest.length; i++) {
  if (rest[i] === '--supervisor') supervisorArgs.push(rest[++i] ?? '');
  else addonArgs.push(rest[i]);
}
if (!stageArg || addonArgs.length === 0) {
  console.error('usage: node packaging/node_stage.mjs STAGE_DIR PLATFORM=ADDON [PLATFORM=ADDON ...] [--supervisor PLATFORM=PROGRAM ...]');
  process.exit(2);
}
const stage = resolve(stageArg);
const byPlatform = (args, what) =>
  new Map(
    args.map((arg) => {
      const at = arg.indexOf('=');
      if (at <= 0) throw new Error(`expected PLATFORM=${what}, got ${arg}`);
      return [arg.slice(0, at), resolve(arg.slice(at + 1))];
    }),
  );
const addons = byPlatform(addonArgs, 'ADDON');
const supervisors = byPlatform(supervisorArgs, 'PROGRAM');

const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));
const writeJson = (path, value) => writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
const source = readJson(join(root, 'node/package.json'));

rmSync(stage, { recursive: true, force: true });
const main = join(stage, source.name);
mkdirSync(join(main, 'native'), { recursive: true });

// The main package: what node/package.json's "files" names, without the build-time fields (its
// scripts build from the repository, its devDependencies are the build's).
const { scripts: _scripts, devDependencies: _devDependencies, ...manifest } = source;
for (const required of ['dist/index.js', 'dist/index.mjs', 'dist/index.d.ts', 'native/index.js', 'native/index.d.ts']) {
  if (!existsSync(join(root, 'node', required))) throw new Error(`node/${required} is missing: run \`npm run build:ts\` first`);
}
cpSync(join(root, 'node/dist'), join(main, 'dist'), { recursive: true });
copyFileSync(join(root, 'node/native/index.js'), join(main, 'native/index.js'));
copyFileSync(join(root, 'node/native/index.d.ts'), join(main, 'native/index.d.ts'));
copyFileSync(join(root, 'docs/node.md'), join(main, 'README.md'));
copyFileSync(join(root, 'LICENSE'), join(main, 'LICENSE'));
writeJson(join(main, 'package.json'), manifest);

// One package per napi target, named and described by napi-rs itself (it writes them inside the
// package folder; they are moved beside it, out of the main package).
const napi = join(root, 'node_modules/.bin/napi');
execFileSync(napi, ['create-npm-dirs', '--cwd', main, '--package-json-path', 'package.json', '--npm-dir', 'npm'], {
  stdio: ['ignore', 'ignore', 'inherit'],
});
renameSync(join(main, 'npm'), join(stage, 'npm'));
const platforms = readdirSync(join(stage, 'npm')).sort();
const optionalDependencies = {};
for (const platform of platforms) {
  const dir = join(stage, 'npm', platform);
  const platformManifest = readJson(join(dir, 'package.json'));
  const addon = addons.get(platform);
  if (!addon) throw new Error(`no addon given for napi target ${platform} (pass ${platform}=PATH)`);
  if (!existsSync(addon)) throw new Error(`${addon} does not exist`);
  // "main" is the file name napi's loader requires: <binaryName>.<platform>.node.
  copyFileSync(addon, join(dir, platformManifest.main));
  copyFileSync(join(root, 'LICENSE'), join(dir, 'LICENSE'));
  const supervisor = supervisors.get(platform);
  if (supervisor) {
    if (!existsSync(supervisor)) throw new Error(`${supervisor} does not exist`);
    copyFileSync(supervisor, join(dir, 'agentstream-supervisor'));
    chmodSync(join(dir, 'agentstream-supervisor'), 0o755);
    platformManifest.files = [...(platformManifest.files ?? [platformManifest.main]), 'agentstream-supervisor'];
    supervisors.delete(platform);
  }
  if (source.repository) platformManifest.repository = source.repository;
  writeJson(join(dir, 'package.json'), platformManifest);
  optionalDependencies[platformManifest.name] = platformManifest.version;
  addons.delete(platform);
}
if (addons.size > 0) throw new Error(`addons for platforms napi.targets does not list: ${[...addons.keys()].join(', ')}`);
if (supervisors.size > 0) throw new Error(`supervisors for platforms napi.targets does not list: ${[...supervisors.keys()].join(', ')}`);

writeJson(join(main, 'package.json'), { ...manifest, optionalDependencies });
console.log(`staged ${source.name}@${source.version} with ${Object.keys(optionalDependencies).join(', ')} in ${stage}`);
