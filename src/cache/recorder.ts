import type { Reads } from './reads.js';
import { EVERYTHING, type Version } from './versions.js';

/**
 * The dependencies of one execution (src/cache/reads.ts): each tag once, with the
 * version it had before its data was read. In memory versions are read when a tag is
 * recorded. With Redis they come from the versions fetched with the lookup; a tag not
 * among them is fetched before its query runs (one more round trip, the first time an
 * operation reads it), and a query that needs a tag still being fetched waits for it.
 */
export class Recorder implements Reads {
  readonly tags: string[] = [];
  readonly versions: Version[] = [];
  /** False when a tag's prior version could not be had: the result must not be stored. */
  complete = true;
  /** Recorded tags; a promise while the tag's version is being fetched. */
  private readonly seen = new Map<string, Promise<void> | undefined>();

  constructor(
    private readonly versionOf: (tag: string) => Version | undefined,
    private readonly fetch?: (tags: readonly string[]) => Promise<Version[] | undefined>,
  ) {
    void this.record([EVERYTHING]);
  }

  read<T>(tags: readonly string[], query: () => Promise<T>): Promise<T> {
    const pending = this.record(tags);
    return pending ? pending.then(query) : query();
  }

  private record(tags: readonly string[]): Promise<unknown> | undefined {
    let waits: Promise<void>[] | undefined;
    let unknown: string[] | undefined;
    for (const tag of tags) {
      if (this.seen.has(tag)) {
        const fetching = this.seen.get(tag);
        if (fetching) (waits ??= []).push(fetching);
        continue;
      }
      const version = this.versionOf(tag);
      if (version !== undefined) {
        this.seen.set(tag, undefined);
        this.add(tag, version);
      } else {
        (unknown ??= []).push(tag);
      }
    }
    if (unknown) {
      const fetching = this.fetchVersions(unknown);
      for (const tag of unknown) this.seen.set(tag, fetching);
      (waits ??= []).push(fetching);
    }
    return waits && (waits.length === 1 ? waits[0] : Promise.all(waits));
  }

  private async fetchVersions(tags: string[]): Promise<void> {
    const versions = this.fetch ? await this.fetch(tags).catch(() => undefined) : undefined;
    tags.forEach((tag, i) => {
      const version = versions?.[i];
      if (version === undefined) this.complete = false;
      this.add(tag, version as Version);
      this.seen.set(tag, undefined);
    });
  }

  private add(tag: string, version: Version): void {
    this.tags.push(tag);
    this.versions.push(version);
  }
}
