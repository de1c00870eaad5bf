import type { MongoClient } from 'mongodb';

/** Wire version of MongoDB 6.0, the first to accept `collectionUUID` on find. */
const WIRE_VERSION_6_0 = 17;

const uuidSupport = new WeakMap<MongoClient, Promise<boolean>>();

/**
 * Whether the server takes `collectionUUID` on reads (6.0+), asked once per client; a failed
 * `hello` is asked again next time.
 */
export function supportsCollectionUUID(client: MongoClient): Promise<boolean> {
  let known = uuidSupport.get(client);
  if (!known) {
    known = client
      .db('admin')
      .command({ hello: 1 })
      .then((reply) => Number(reply.maxWireVersion ?? 0) >= WIRE_VERSION_6_0)
      .catch(() => {
        uuidSupport.delete(client);
        return false;
      });
    uuidSupport.set(client, known);
  }
  return known;
}
