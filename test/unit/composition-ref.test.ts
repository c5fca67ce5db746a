import assert from 'node:assert/strict';
import { resolveCompositionRef } from '../../lib/domain/composition-ref';
import { AppError } from '../../lib/domain/errors';

describe('composition id resolver (UUID, short id, project URL)', () => {
  const WEB = 'https://web.example/app';
  const PROJECT = '0193a3c2-1234-7abc-8def-0123456789ab';
  const OTHER = '0193a3c2-9999-7abc-8def-0123456789ab';
  const A = { composition_id: '1e7d4a0c-3b5f-4c8e-a2d9-6f0b1c3e5a77', short_id: '1e7d4' };
  const B = { composition_id: '9c2e6b1a-0d4f-4e3a-8b7c-5a1d2f3e4b60', short_id: '9c2e6' };
  const project = { project_id: PROJECT, compositions: [A, B] };
  const resolve = (ref: string) => resolveCompositionRef(ref, project, WEB);
  const refused = (ref: string, code: string, message: RegExp) =>
    assert.throws(
      () => resolve(ref),
      (e: AppError) => e.code === code && message.test(e.message),
    );

  it('takes a UUID (any case), a short id, and this project URL', () => {
    assert.equal(resolve(B.composition_id), B.composition_id);
    assert.equal(resolve(B.composition_id.toUpperCase()), B.composition_id);
    assert.equal(resolve('9c2e6'), B.composition_id);
    assert.equal(resolve('9C2E6'), B.composition_id);
    assert.equal(resolve(`${WEB}/${PROJECT}/1e7d4`), A.composition_id);
    assert.equal(resolve(`${WEB}/${PROJECT}/1e7d4/`), A.composition_id);
  });

  it('404 for a well-formed id that names no composition of the project', () => {
    refused('0193a3c2-0000-7abc-8def-0123456789ab', 'not_found', /composition_id: composition .* does not exist in project/);
    refused('abcde', 'not_found', /no composition with short id abcde/);
    refused(`${WEB}/${PROJECT}/abcde`, 'not_found', /short id abcde/);
  });

  it('400 for a URL naming another project, another site, or another shape', () => {
    refused(`${WEB}/${OTHER}/1e7d4`, 'invalid_input', new RegExp(`of project ${OTHER}, not of project ${PROJECT}`));
    refused(`https://evil.example/app/${PROJECT}/1e7d4`, 'invalid_input', /as a URL must be/);
    refused(`${WEB}/${PROJECT}`, 'invalid_input', /as a URL must be/);
    refused(`${WEB}/${PROJECT}/1e7d4?x=1`, 'invalid_input', /as a URL must be/);
    refused(`${WEB}/not-a-uuid/1e7d4`, 'invalid_input', /as a URL must be/);
  });

  it('400 for anything else, naming the field and the accepted forms', () => {
    for (const ref of ['main', '1e7d', '1e7d4a', 'zzzzz', 'ftp://web.example/x']) {
      refused(ref, 'invalid_input', /composition_id must be a composition UUID, a short id \(5 hex digits\), or a project URL/);
    }
  });
});
