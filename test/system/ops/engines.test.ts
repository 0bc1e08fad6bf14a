import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { ROOT, run, scratchDir } from './helpers.js';

/**
 * package.json's `engines.node` must stay true of the installed tree: every production
 * dependency has to declare support for every Node version we declare (docs/decisions.md,
 * "Node versions"). An upgrade that drops one of them fails here, not on an operator's box.
 */
const declared = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;

/**
 * The folders of every installed package: the service's (`--omit=dev`), or all of them.
 * Read from npm's record of the installed tree (node_modules/.package-lock.json, which
 * `npm ci` writes and `npm ls` reads; it lists the same folders as `npm ls --all`).
 */
function installedPackages(omitDev: boolean): string[] {
  const tree = JSON.parse(readFileSync(join(ROOT, 'node_modules', '.package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean }>;
  };
  return Object.entries(tree.packages)
    .filter(([path, entry]) => path !== '' && !(omitDev && entry.dev))
    .map(([path]) => join(ROOT, path));
}

/** The installed packages whose `engines.node` leaves out part of the declared range. */
function excludingPackages(dirs: string[]): string[] {
  const excluding: string[] = [];
  for (const dir of dirs) {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; version: string; engines?: { node?: string } };
    const range = manifest.engines?.node;
    if (range === undefined) continue;
    if (!semver.subset(declared, range)) {
      excluding.push(`${manifest.name}@${manifest.version} (${relative(ROOT, dir)}) needs node "${range}"`);
    }
  }
  return excluding;
}

/**
 * `npm ci --dry-run --offline` in a folder holding only these two files: npm resolves the
 * lockfile and checks every package's engines against the running Node, as a real
 * `npm ci` does, without fetching anything. Returns npm's warnings about packages.
 */
async function npmCiWarnings(files: { 'package.json': string; 'package-lock.json': string }): Promise<string[]> {
  const dir = scratchDir('npm-ci');
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const result = await run('npm', ['ci', '--dry-run', '--offline', '--no-audit', '--no-fund'], { cwd: dir });
    expect(result.status, result.stderr).toBe(0);
    return `${result.stdout}\n${result.stderr}`.split('\n').filter((line) => /^npm warn (EBADENGINE|install-scripts)/.test(line));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('engines.node', () => {
  it('is a valid range', () => {
    expect(semver.validRange(declared)).not.toBeNull();
  });

  it('covers the Node running the tests (CI tests only versions we declare)', () => {
    expect(semver.satisfies(process.versions.node, declared), `Node ${process.versions.node} is outside "${declared}"`).toBe(true);
  });

  it('is within what every installed production dependency declares', () => {
    const packages = installedPackages(true);
    expect(packages.length).toBeGreaterThan(50); // the listing worked
    expect(excludingPackages(packages), `declared "${declared}"`).toEqual([]);
  });

  it('is within what every installed package declares, dev tools included (npm ci warns on no supported Node)', () => {
    const packages = installedPackages(false);
    expect(packages.some((dir) => dir.endsWith('/node_modules/vitest'))).toBe(true); // the dev tools are listed too
    expect(excludingPackages(packages), `declared "${declared}"`).toEqual([]);
  });

  it('would notice a dependency that needs a newer Node', () => {
    // The check itself: cookie@2 declares ">=22", which our range (Node 20) goes beyond.
    expect(semver.subset(declared, '>=22')).toBe(false);
    expect(semver.subset(declared, '20.x || 22.x || 23.x || 24.x || 25.x || 26.x')).toBe(true);
  });
});

describe('npm ci of the committed lockfile, on the Node running the tests', () => {
  it('prints no EBADENGINE warning and no unreviewed install script (README, "Quick start")', async () => {
    const read = (name: string) => readFileSync(join(ROOT, name), 'utf8');
    const warnings = await npmCiWarnings({ 'package.json': read('package.json'), 'package-lock.json': read('package-lock.json') });
    expect(warnings).toEqual([]);
  });

  it('would notice a package that needs a newer Node', async () => {
    const manifest = { name: 'fixture', version: '1.0.0', private: true, dependencies: { 'needs-future-node': '1.0.0' } };
    const lockfile = {
      name: 'fixture',
      version: '1.0.0',
      lockfileVersion: 3,
      requires: true,
      packages: {
        '': { name: 'fixture', version: '1.0.0', dependencies: manifest.dependencies },
        'node_modules/needs-future-node': {
          version: '1.0.0',
          resolved: 'https://registry.npmjs.org/needs-future-node/-/needs-future-node-1.0.0.tgz',
          integrity: 'sha512-AAAA',
          engines: { node: '>=99' },
        },
      },
    };
    const warnings = await npmCiWarnings({ 'package.json': JSON.stringify(manifest), 'package-lock.json': JSON.stringify(lockfile) });
    expect(warnings).toContain('npm warn EBADENGINE Unsupported engine {');
  });
});
