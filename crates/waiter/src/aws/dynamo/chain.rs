//! The writes of a job's life across its attempts: the next attempt over the record its last
//! one left, and the one transaction that parks a job whose attempts ran out.

use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem};

use super::*;
use crate::aws::classify;
use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::{History, Over, StoredJob};

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

    /// `item` over what its key held when read: nothing, a record, or a job's edition.
    fn put_over_as_read(&self, queue: &QueueName, item: Item, over: Over<'_>) -> Result<Put, PortError> {
        let put = Put::builder().table_name(self.table(queue)).set_item(Some(item));
        match over {
            Over::Free => put.condition_expression("attribute_not_exists(job_id)"),
            Over::Sent(j) => if_same_edition!(put, j.edition()),
            Over::Record(r) => put
                .condition_expression(IS_THIS_RECORD)
                .expression_attribute_names("#history", A_HISTORY)
                .expression_attribute_names("#v", A_VERSION)
                .expression_attribute_values(":v", AttributeValue::N(r.version.to_string())),
        }
        .build()
        .map_err(|e| internal("TransactWriteItems", e))
    }

    /// One `TransactWriteItems`: the parked attempt into a free key of the parked partition, and
    /// `home` over what the home key held when read.
    pub(super) async fn park_attempts_exhausted(
        &self,
        parked: &StoredJob,
        home: &History,
        over: Over<'_>,
    ) -> Result<bool, PortError> {
        let queue = &parked.job.queue;
        let table = self.table(queue);
        let into_parked = Put::builder()
            .table_name(&table)
            .set_item(Some(encode(parked)))
            .condition_expression("attribute_not_exists(job_id)")
            .build()
            .map_err(|e| internal("TransactWriteItems", e))?;
        let at_home = self.put_over_as_read(queue, encode_history(home), over)?;
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

    /// One `TransactWriteItems`: the parked attempt deleted if it is still that edition, and
    /// `item` (the attempt redriven, or the cancel's record) over what its home key held when
    /// read. `false`, and nothing written, when either changed.
    pub(super) async fn leave_parked(&self, parked: &StoredJob, item: Item, over: Over<'_>) -> Result<bool, PortError> {
        let queue = &parked.job.queue;
        let delete = Delete::builder()
            .table_name(self.table(queue))
            .set_key(Some(key(queue, &parked.key())));
        let delete = if_same_edition!(delete, parked.edition())
            .build()
            .map_err(|e| internal("TransactWriteItems", e))?;
        let res = self
            .client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().delete(delete).build())
            .transact_items(
                TransactWriteItem::builder()
                    .put(self.put_over_as_read(queue, item, over)?)
                    .build(),
            )
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) => failed_condition(e, &self.resource(queue)).map(|_| false),
        }
    }
}
