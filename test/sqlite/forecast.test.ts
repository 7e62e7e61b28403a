import { forecastConformance } from '../conformance/forecast.js';
import { sqliteForSuite } from '../support/sqlite.js';

forecastConformance('sqlite', sqliteForSuite());
