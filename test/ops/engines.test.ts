import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers.js';

/**
 * package.json's `engines.node` must stay true of the installed tree: every production
 * dependency has to declare support for every Node version we declare (docs/decisions.md,
 * "Node versions"). An upgrade that drops one of them fails here, not on an operator's box.
 */
const declared = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;

/** The folders of every installed package the service needs at run time. */
function productionPackages(): string[] {
  const out = execFileSync('npm', ['ls', '--all', '--omit=dev', '--parseable'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 26 });
  const root = ROOT.replace(/\/$/, '');
  return out.split('\n').filter((path) => path && path !== root);
}

describe('engines.node', () => {
  it('is a valid range', () => {
    expect(semver.validRange(declared)).not.toBeNull();
  });

  it('covers the Node running the tests (CI tests only versions we declare)', () => {
    expect(semver.satisfies(process.versions.node, declared), `Node ${process.versions.node} is outside "${declared}"`).toBe(true);
  });

  it('is within what every installed production dependency declares', () => {
    const packages = productionPackages();
    expect(packages.length).toBeGreaterThan(50); // the listing worked
    const excluding: string[] = [];
    for (const dir of packages) {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; version: string; engines?: { node?: string } };
      const range = manifest.engines?.node;
      if (range === undefined) continue;
      if (!semver.subset(declared, range)) {
        excluding.push(`${manifest.name}@${manifest.version} (${relative(ROOT, dir)}) needs node "${range}"`);
      }
    }
    expect(excluding, `declared "${declared}"`).toEqual([]);
  });

  it('would notice a dependency that needs a newer Node', () => {
    // The check itself: cookie@2 declares ">=22", which our range (Node 20) goes beyond.
    expect(semver.subset(declared, '>=22')).toBe(false);
    expect(semver.subset(declared, '20.x || 22.x || 23.x || 24.x || 25.x || 26.x')).toBe(true);
  });
});
