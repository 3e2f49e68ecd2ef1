//! The writes of a job's life across its attempts: the next attempt over the record its last
//! one left, and the one transaction that parks a job whose attempts ran out.

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};

use super::*;
use crate::aws::classify;
use crate::error::PortError;
use crate::ports::{History, StoredJob};

/// The key holds exactly this history record: a record (no `perform_at`) of this version.
const IS_THIS_RECORD: &str = "attribute_exists(#history) AND #v = :v";

impl DynamoStore {
    pub(super) async fn put_job_over(&self, job: &StoredJob, record: &History) -> Result<bool, PortError> {
        let queue = &job.job.queue;
        let res = self
            .client
            .put_item()
            .table_name(self.table(queue))
            .set_item(Some(encode(job)))
            .condition_expression(IS_THIS_RECORD)
            .expression_attribute_names("#history", A_HISTORY)
            .expression_attribute_names("#v", A_VERSION)
            .expression_attribute_values(":v", AttributeValue::N(record.version.to_string()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failed(&e) => Ok(false),
            Err(e) => Err(classify("PutItem", &self.resource(queue), e)),
        }
    }

    /// One `TransactWriteItems`: the parked attempt into a free key of the parked partition, and
    /// `home` over what the home key held when read.
    pub(super) async fn park_attempts_exhausted(
        &self,
        parked: &StoredJob,
        home: &History,
        over: Option<&History>,
    ) -> Result<bool, PortError> {
        let queue = &parked.job.queue;
        let table = self.table(queue);
        let into_parked = Put::builder()
            .table_name(&table)
            .set_item(Some(encode(parked)))
            .condition_expression("attribute_not_exists(job_id)")
            .build()
            .map_err(|e| internal("TransactWriteItems", e))?;
        let at_home = Put::builder().table_name(&table).set_item(Some(encode_history(home)));
        let at_home = match over {
            None => at_home.condition_expression("attribute_not_exists(job_id)"),
            Some(r) => at_home
                .condition_expression(IS_THIS_RECORD)
                .expression_attribute_names("#history", A_HISTORY)
                .expression_attribute_names("#v", A_VERSION)
                .expression_attribute_values(":v", AttributeValue::N(r.version.to_string())),
        }
        .build()
        .map_err(|e| internal("TransactWriteItems", e))?;
        let res = self
            .client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().put(into_parked).build())
            .transact_items(TransactWriteItem::builder().put(at_home).build())
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) => failed_condition(e, &self.resource(queue)).map(|_| false),
        }
    }
}
