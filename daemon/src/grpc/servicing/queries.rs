//! StatusService and ValidationService: read-only, under the connection
//! read lock, concurrent with each other and with a running operation.

use tonic::{Request, Response, Status};
use trident_engine::flows::query;
use trident_host::config::{self, HostConfiguration};
use trident_host::status::AbVolume;
use trident_host::{Subkind, TridentError};
use trident_proto::v1;
use trident_proto::v1preview::{
    self, status_service_server::StatusService, validation_service_server::ValidationService,
};

use super::ServicingApi;
use crate::grpc::additions::Additions;
use crate::grpc::error_status::to_status;

/// A stored configuration as served: its secrets redacted
/// (`trident_host::redact::document`).
fn config_response(
    config: Option<&HostConfiguration>,
) -> Result<Response<v1preview::GetConfigResponse>, Status> {
    let config = match config {
        Some(hc) => Some(v1::HostConfiguration {
            config: config::to_yaml(&hc.redacted().map_err(to_status)?).map_err(to_status)?,
        }),
        None => None,
    };
    Ok(Response::new(v1preview::GetConfigResponse { config }))
}

fn request_config(config: Option<v1::HostConfiguration>) -> Result<String, TridentError> {
    match config {
        Some(c) if !c.config.trim().is_empty() => Ok(c.config),
        _ => Err(TridentError::new(
            Subkind::InvalidRequest,
            "the request carries no Host Configuration (config.config is empty)",
        )),
    }
}

#[tonic::async_trait]
impl StatusService for ServicingApi {
    async fn get_provisioned_config(
        &self,
        _request: Request<v1preview::GetConfigRequest>,
    ) -> Result<Response<v1preview::GetConfigResponse>, Status> {
        let status = self.status().await?;
        config_response(query::provisioned_config(&status))
    }

    async fn get_servicing_config(
        &self,
        _request: Request<v1preview::GetConfigRequest>,
    ) -> Result<Response<v1preview::GetConfigResponse>, Status> {
        let status = self.status().await?;
        config_response(query::servicing_config(&status))
    }

    async fn get_last_error(
        &self,
        request: Request<v1preview::GetLastErrorRequest>,
    ) -> Result<Response<v1preview::GetLastErrorResponse>, Status> {
        let additions = Additions::from_metadata(request.metadata());
        let status = self.status().await?;
        Ok(Response::new(v1preview::GetLastErrorResponse {
            error: status
                .last_error
                .as_ref()
                .map(|e| additions.error(e.to_proto())),
        }))
    }

    async fn get_servicing_state(
        &self,
        _request: Request<v1preview::GetServicingStateRequest>,
    ) -> Result<Response<v1preview::GetServicingStateResponse>, Status> {
        let status = self.status().await?;
        Ok(Response::new(v1preview::GetServicingStateResponse {
            state: status.servicing_state.to_proto() as i32,
        }))
    }

    async fn get_active_volume(
        &self,
        _request: Request<v1preview::GetActiveVolumeRequest>,
    ) -> Result<Response<v1preview::GetActiveVolumeResponse>, Status> {
        let status = self.status().await?;
        Ok(Response::new(v1preview::GetActiveVolumeResponse {
            active_volume: AbVolume::option_to_proto(status.ab_active_volume) as i32,
        }))
    }
}

#[tonic::async_trait]
impl ValidationService for ServicingApi {
    async fn validate_host_configuration(
        &self,
        request: Request<v1preview::ValidateHostConfigurationRequest>,
    ) -> Result<Response<v1preview::ValidateHostConfigurationResponse>, Status> {
        let additions = Additions::from_metadata(request.metadata());
        let result = request_config(request.into_inner().config)
            .and_then(|yaml| Ok((config::parse(&yaml)?, yaml)));
        Ok(Response::new(match result {
            Ok((hc, yaml)) => v1preview::ValidateHostConfigurationResponse {
                ok: true,
                error: None,
                warnings: if additions.warnings {
                    config::warnings(&hc, &yaml)
                } else {
                    Vec::new()
                },
            },
            Err(e) => v1preview::ValidateHostConfigurationResponse {
                ok: false,
                error: Some(additions.error(e.record().to_proto())),
                warnings: Vec::new(),
            },
        }))
    }

    async fn get_required_servicing_type(
        &self,
        request: Request<v1preview::GetRequiredServicingTypeRequest>,
    ) -> Result<Response<v1preview::GetRequiredServicingTypeResponse>, Status> {
        let hc = request_config(request.into_inner().config)
            .and_then(|yaml| config::parse(&yaml))
            .map_err(to_status)?;
        let status = self.status().await?;
        let servicing_type = query::required_servicing(&status, &hc).map_err(to_status)?;
        Ok(Response::new(v1preview::GetRequiredServicingTypeResponse {
            servicing_type: servicing_type as i32,
        }))
    }
}
