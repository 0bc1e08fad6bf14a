import type { Reads } from '../../domain/reads.js';
import { EVERYTHING, type Version } from '../../store/versions.js';

/**
 * The dependencies of one execution (src/domain/reads.ts): each tag once, with the
 * version it had before the data was read. In memory the version is read when the tag
 * is recorded; with Redis it comes from the versions fetched before execution began,
 * and a tag not among them makes the result not storable this time (docs/decisions.md).
 */
export class Recorder implements Reads {
  readonly tags: string[] = [];
  readonly versions: Version[] = [];
  /** False when a tag's prior version is unknown: the result must not be stored. */
  complete = true;
  private readonly seen = new Set<string>();

  constructor(private readonly versionOf: (tag: string) => Version | undefined) {
    this.depend(EVERYTHING);
  }

  depend(tag: string): void {
    if (this.seen.has(tag)) return;
    this.seen.add(tag);
    const version = this.versionOf(tag);
    if (version === undefined) this.complete = false;
    this.tags.push(tag);
    this.versions.push(version as Version);
  }
}
