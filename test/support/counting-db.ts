/** The D1 binding, counting its round trips: each statement run and each batch is one. */
export function countingDb(db: D1Database): { db: D1Database; trips: () => number } {
  let trips = 0;
  const real = new WeakMap<object, D1PreparedStatement>();
  const runs = new Set<PropertyKey>(["first", "run", "all", "raw"]);
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const wrapped = new Proxy(statement, {
      get(target, key) {
        if (key === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
        const value: unknown = Reflect.get(target, key, target);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (runs.has(key)) trips++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    real.set(wrapped, statement);
    return wrapped;
  };
  const counted = new Proxy(db, {
    get(target, key) {
      if (key === "prepare") return (sql: string) => wrap(target.prepare(sql));
      if (key === "batch") {
        return (statements: D1PreparedStatement[]) => {
          trips++;
          return target.batch(statements.map((s) => real.get(s) ?? s));
        };
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === "function" ? (value as () => unknown).bind(target) : value;
    },
  });
  return { db: counted, trips: () => trips };
}
