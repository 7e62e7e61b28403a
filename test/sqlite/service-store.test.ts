import { serviceStoreConformance } from '../conformance/service-store.js';
import { openTempSqlite } from '../support/sqlite.js';

serviceStoreConformance('sqlite', () => openTempSqlite());
