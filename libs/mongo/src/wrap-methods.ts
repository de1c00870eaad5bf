type Method = (...args: unknown[]) => unknown;

/**
 * `target` behind a Proxy whose methods `wrap` chooses are replaced: `wrap` gets the property
 * and the method bound to `target`, and returns the replacement, or null to leave the method as
 * it is. Each replacement is made once per method, so `a.f === a.f` still holds. The adapters'
 * one way to add a concern to every call (a lease check, fault labelling) without touching
 * each method.
 */
export function wrapMethods<T extends object>(
  target: T,
  wrap: (property: PropertyKey, call: Method) => Method | null,
): T {
  const made = new Map<PropertyKey, { of: unknown; replacement: unknown }>();
  return new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver) as unknown;
      if (typeof value !== 'function' || property === 'constructor') return value;
      const known = made.get(property);
      if (known?.of === value) return known.replacement;
      const method = value as Method;
      const replacement =
        wrap(property, (...args: unknown[]) => method.apply(object, args)) ?? value;
      made.set(property, { of: value, replacement });
      return replacement;
    },
  });
}
