import t from 'tap';
import { errorTable, GrpcCode, StorageError } from '../../src/errors.js';

void t.test('a full state directory is 507 / RESOURCE_EXHAUSTED; another write failure 500 / INTERNAL', async (t) => {
  for (const errno of ['ENOSPC', 'EDQUOT']) {
    const error = new StorageError(errno, 'full');
    t.equal(error.code, 'INSUFFICIENT_STORAGE');
    t.equal(error.httpStatus, 507);
    t.equal(error.grpcCode, GrpcCode.RESOURCE_EXHAUSTED);
    t.equal(error.errno, errno);
  }
  for (const errno of ['EROFS', 'EACCES', 'EIO']) {
    const error = new StorageError(errno, 'cannot write');
    t.equal(error.code, 'STORAGE_FAILED');
    t.equal(error.httpStatus, 500);
    t.equal(error.grpcCode, GrpcCode.INTERNAL);
  }
});

void t.test('every code has one HTTP status and one gRPC code', async (t) => {
  for (const [code, entry] of Object.entries(errorTable)) {
    t.ok(entry.http >= 400 && entry.http <= 599, `${code}: HTTP ${entry.http}`);
    t.ok((Object.values(GrpcCode) as number[]).includes(entry.grpc), `${code}: gRPC ${entry.grpc}`);
  }
});
