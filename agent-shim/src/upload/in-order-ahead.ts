/**
 * The work of `items`, in their order, each started as soon as a place frees rather than when
 * the reader takes a result: at most `running` under way at once, at most `held` started and
 * not yet taken (memory stays flat however many items there are). The next item is fetched
 * while the places are full, so that it starts the moment one frees: the threads doing the work
 * do not wait for the reader's turn on the main thread (a member written to its part, a PUT's
 * bytes sent) nor for the next item's read. A failure of the work surfaces in its turn; a
 * failure of `items` once the results started before it have been taken.
 */
export async function* inOrderAhead<T, R>(
  items: AsyncIterable<T>,
  work: (item: T) => Promise<R>,
  running: number,
  held: number,
): AsyncGenerator<R> {
  const source = items[Symbol.asyncIterator]();
  const started: Promise<R>[] = [];
  let underWay = 0;
  let ended = false;
  let stopped = false;
  let failure: { error: unknown } | undefined;
  let roomFreed: (() => void) | undefined;
  let resultStarted: (() => void) | undefined;
  const wakeProducer = () => {
    const wake = roomFreed;
    roomFreed = undefined;
    wake?.();
  };
  const wakeReader = () => {
    const wake = resultStarted;
    resultStarted = undefined;
    wake?.();
  };
  const settled = () => {
    underWay -= 1;
    wakeProducer();
  };

  const produce = async () => {
    try {
      for (let next = source.next(); ;) {
        const item = await next;
        if (item.done || stopped) return;
        while (!stopped && (underWay >= running || started.length >= held)) {
          await new Promise<void>((resolve) => (roomFreed = resolve));
        }
        if (stopped) return;
        underWay += 1;
        const result = work(item.value);
        result.then(settled, settled); // a rejection is awaited in its turn, not unhandled here
        started.push(result);
        wakeReader();
        next = source.next();
      }
    } catch (error) {
      failure = { error };
    } finally {
      ended = true;
      wakeReader();
    }
  };

  const producing = produce();
  try {
    for (;;) {
      while (started.length === 0 && !ended) {
        await new Promise<void>((resolve) => (resultStarted = resolve));
      }
      const next = started.shift();
      if (next === undefined) break;
      wakeProducer();
      yield await next;
    }
    if (failure) throw failure.error;
  } finally {
    stopped = true;
    wakeProducer();
    await producing;
    await source.return?.();
  }
}
