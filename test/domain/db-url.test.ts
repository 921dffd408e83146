/** The address a run is handed: the store's without its password (domain/db-url.ts). */
import { expect, test } from '@jest/globals';
import { urlWithoutPassword } from '../../src/domain/db-url.js';

test.each([
  ['postgresql://dcm:s3cret@db.example.net/fleet', 'postgresql://dcm@db.example.net/fleet'],
  ['postgres://dcm:s3%40cret@db:5433/fleet?sslmode=require', 'postgres://dcm@db:5433/fleet?sslmode=require'],
  ['postgresql:///fleet?host=/run/pg&password=s3cret&port=5433', 'postgresql:///fleet?host=/run/pg&port=5433'],
  ['postgresql://dcm@db/fleet?password=s3cret', 'postgresql://dcm@db/fleet'],
  ['postgresql://dcm@db/fleet', 'postgresql://dcm@db/fleet'],
  ['/srv/dcm/fleet.db', '/srv/dcm/fleet.db'],
])('%s → %s', (url, expected) => {
  expect(urlWithoutPassword(url)).toBe(expected);
});
