import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { AppError } from '../../domain/errors';
import type { SecretBox } from '../../ports/secret-box';

/**
 * SecretBox on AES-256-GCM. A sealed value reads `sealed:v1:<key id>:<base64url of iv | ciphertext
 * | tag>`; the context (a drive id) is the associated data, so a value copied onto another drive
 * does not open. The key id (a hash of the key, not the key) lets an error say which key is missing.
 */

const PREFIX = 'sealed:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** `keyMaterial`: SECRETS_KEY or the key file's content; any length, stretched by HKDF. */
export function createSecretBox(keyMaterial: string): SecretBox {
  const key = Buffer.from(hkdfSync('sha256', keyMaterial, '', 'media-project-service secret box v1', 32));
  const keyId = createHash('sha256').update(key).digest('hex').slice(0, 8);
  return {
    seal(secret, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(context, 'utf8'));
      const body = Buffer.concat([iv, cipher.update(secret, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return `${PREFIX}${keyId}:${body.toString('base64url')}`;
    },
    open(stored, context) {
      if (!stored.startsWith(PREFIX)) return stored;
      const [storedKeyId, encoded = ''] = stored.slice(PREFIX.length).split(':');
      if (storedKeyId !== keyId) throw unopenable(context, `it was sealed with key ${storedKeyId}, and this process has key ${keyId}`);
      const body = Buffer.from(encoded, 'base64url');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(0, IV_BYTES)).setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
        return Buffer.concat([decipher.update(body.subarray(IV_BYTES, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
      } catch {
        throw unopenable(context, 'it does not authenticate (damaged, or sealed for another record)');
      }
    },
  };
}

const unopenable = (context: string, why: string) =>
  new AppError(
    'internal_error',
    `the secret of ${context} cannot be opened: ${why}; SECRETS_KEY (or DATA_DIR/secrets.key) must be the one it was sealed with, or the secret rotated`,
  );
