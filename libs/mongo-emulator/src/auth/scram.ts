import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Binary, type Document } from 'bson';
import { CommandError } from '../errors';
import type { AuthenticatedUser } from '../commands/types';
import {
  SCRAM_MECHANISMS,
  scramHash,
  type ScramMechanism,
  type StoredUser,
  type UserRegistry,
} from './user-registry';

/**
 * Server side of SCRAM (RFC 5802 / RFC 7677) as mongod speaks it through saslStart /
 * saslContinue: client-first → server-first (r, s, i) → client-final (c, r, p) → server-final (v).
 * With `options.skipEmptyExchange` the server-final message already carries `done: true`,
 * otherwise one more empty round trip finishes the conversation.
 */
export interface ScramConversation {
  mechanism: ScramMechanism;
  user: StoredUser;
  clientFirstBare: string;
  serverFirst: string;
  nonce: string;
  skipEmptyExchange: boolean;
  state: 'awaitingClientFinal' | 'awaitingEmpty' | 'done';
}

export interface SaslStepResult {
  reply: Document;
  /** Set when the conversation completed successfully. */
  authenticated?: AuthenticatedUser;
}

/** mongod's conversation ids are per connection and always 1 for SCRAM. */
export const SCRAM_CONVERSATION_ID = 1;

export function authenticationFailed(): CommandError {
  return new CommandError('AuthenticationFailed', 'Authentication failed.');
}

export function payloadBytes(payload: unknown): Buffer {
  if (payload instanceof Binary) return Buffer.from(payload.value());
  if (payload instanceof Uint8Array) return Buffer.from(payload);
  if (typeof payload === 'string') return Buffer.from(payload, 'utf8');
  throw new CommandError(
    'TypeMismatch',
    "BSON field 'payload' is the wrong type, expected type 'binData'",
  );
}

function parseAttributes(text: string): Map<string, string> {
  const attrs = new Map<string, string>();
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    if (eq !== 1) throw authenticationFailed();
    attrs.set(part[0], part.slice(2));
  }
  return attrs;
}

/** SCRAM escapes ',' and '=' in user names as =2C and =3D. */
function decodeSaslName(name: string): string {
  if (/=(?!2C|3D)/.test(name)) throw authenticationFailed();
  return name.replace(/=2C/g, ',').replace(/=3D/g, '=');
}

export function startScram(
  users: UserRegistry,
  db: string,
  cmd: Document,
): { conversation: ScramConversation; reply: Document } {
  const mechanism = cmd.mechanism;
  if (typeof mechanism !== 'string') {
    throw new CommandError(
      'TypeMismatch',
      "BSON field 'saslStart.mechanism' is missing or not a string",
    );
  }
  if (!SCRAM_MECHANISMS.includes(mechanism as ScramMechanism)) {
    throw new CommandError(
      'MechanismUnavailable',
      `Received authentication for mechanism ${mechanism} which is not enabled`,
    );
  }
  const clientFirst = payloadBytes(cmd.payload).toString('utf8');
  // gs2 header: channel-binding flag ('n' or 'y'; 'p=' would need TLS binding) and an empty authzid.
  const match = /^([ny]),(a=[^,]*)?,(.*)$/.exec(clientFirst);
  if (!match) throw authenticationFailed();
  const clientFirstBare = match[3];
  const attrs = parseAttributes(clientFirstBare);
  const userName = decodeSaslName(attrs.get('n') ?? '');
  const clientNonce = attrs.get('r');
  if (!userName || !clientNonce) throw authenticationFailed();
  const user = users.find(db, userName);
  const credential = user?.credentials[mechanism as ScramMechanism];
  if (!user || !credential) throw authenticationFailed();

  const nonce = clientNonce + randomBytes(24).toString('base64');
  const serverFirst = `r=${nonce},s=${credential.salt.toString('base64')},i=${credential.iterationCount}`;
  const options = cmd.options && typeof cmd.options === 'object' ? (cmd.options as Document) : {};
  return {
    conversation: {
      mechanism: mechanism as ScramMechanism,
      user,
      clientFirstBare,
      serverFirst,
      nonce,
      skipEmptyExchange: options.skipEmptyExchange === true,
      state: 'awaitingClientFinal',
    },
    reply: {
      conversationId: SCRAM_CONVERSATION_ID,
      done: false,
      payload: new Binary(Buffer.from(serverFirst, 'utf8')),
    },
  };
}

export function continueScram(conv: ScramConversation, payload: unknown): SaslStepResult {
  if (conv.state === 'awaitingEmpty') {
    conv.state = 'done';
    return {
      reply: {
        conversationId: SCRAM_CONVERSATION_ID,
        done: true,
        payload: new Binary(Buffer.alloc(0)),
      },
      authenticated: { user: conv.user.user, db: conv.user.db, roles: conv.user.roles },
    };
  }
  if (conv.state !== 'awaitingClientFinal') throw authenticationFailed();
  const clientFinal = payloadBytes(payload).toString('utf8');
  const proofAt = clientFinal.lastIndexOf(',p=');
  if (proofAt < 0) throw authenticationFailed();
  const withoutProof = clientFinal.slice(0, proofAt);
  const attrs = parseAttributes(withoutProof);
  // c=biws is base64("n,,"): no channel binding, no authzid.
  if (attrs.get('r') !== conv.nonce || !attrs.has('c')) throw authenticationFailed();
  const proof = Buffer.from(clientFinal.slice(proofAt + 3), 'base64');

  const hash = scramHash(conv.mechanism);
  const credential = conv.user.credentials[conv.mechanism];
  const authMessage = `${conv.clientFirstBare},${conv.serverFirst},${withoutProof}`;
  const clientSignature = createHmac(hash, credential.storedKey).update(authMessage).digest();
  if (proof.length !== clientSignature.length) throw authenticationFailed();
  const clientKey = Buffer.alloc(proof.length);
  for (let i = 0; i < proof.length; i++) clientKey[i] = proof[i] ^ clientSignature[i];
  const storedKey = createHash(hash).update(clientKey).digest();
  if (!timingSafeEqual(storedKey, credential.storedKey)) throw authenticationFailed();

  const serverSignature = createHmac(hash, credential.serverKey)
    .update(authMessage)
    .digest('base64');
  const serverFinal = new Binary(Buffer.from(`v=${serverSignature}`, 'utf8'));
  if (conv.skipEmptyExchange) {
    conv.state = 'done';
    return {
      reply: { conversationId: SCRAM_CONVERSATION_ID, done: true, payload: serverFinal },
      authenticated: { user: conv.user.user, db: conv.user.db, roles: conv.user.roles },
    };
  }
  conv.state = 'awaitingEmpty';
  return { reply: { conversationId: SCRAM_CONVERSATION_ID, done: false, payload: serverFinal } };
}
