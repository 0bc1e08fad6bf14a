/**
 * Keeps the events `keep` accepts, in order. Returning (or throwing into) the result
 * returns the source, so a pub/sub listener is released however the consumer stops.
 */
export function filterAsync<T>(
  source: AsyncIterator<T>,
  keep: (value: T) => boolean | Promise<boolean>,
): AsyncIterableIterator<T> {
  const release = async (): Promise<IteratorResult<T>> => {
    await source.return?.();
    return { value: undefined, done: true };
  };
  return {
    async next() {
      for (;;) {
        const result = await source.next();
        if (result.done) return result;
        let kept: boolean;
        try {
          kept = await keep(result.value);
        } catch (error) {
          await release();
          throw error;
        }
        if (kept) return result;
      }
    },
    return: release,
    async throw(error: unknown) {
      await release();
      throw error;
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
